// Package deploy_test keeps the deployment files honest against the code:
// every environment variable they set is read by pkg/config, every binary
// they run is built from cmd/, every port and probe path is one the processes
// serve, and every metric the dashboard and autoscaler query is registered.
// Renaming an env var, a binary, a route or a metric in Go fails this test.
//
// YAML is parsed with github.com/goccy/go-yaml, already required (indirectly)
// in go.mod with its checksum in go.sum; gopkg.in/yaml.v3 is only in the module
// graph without a go.sum hash, so importing it would need `go get`.
package deploy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

const root = ".." // go test runs in deploy/

// ---------------------------------------------------------------- the code

type codeFacts struct {
	env      map[string]string   // env tag -> envDefault ("" if none)
	binaries map[string]bool     // cmd/<name>
	metrics  map[string][]string // metric name -> label names
	paths    map[string]bool     // HTTP paths registered with GET(...) or as handler-map keys
	ctlUses  map[string]bool     // first words of importctl cobra `Use:` strings
}

var facts *codeFacts

func code(t *testing.T) *codeFacts {
	t.Helper()
	if facts != nil {
		return facts
	}
	f := &codeFacts{env: configEnv(t), binaries: map[string]bool{}, metrics: map[string][]string{},
		paths: map[string]bool{}, ctlUses: map[string]bool{}}
	entries, err := os.ReadDir(filepath.Join(root, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && hasMainPackage(t, filepath.Join(root, "cmd", e.Name())) {
			f.binaries[e.Name()] = true
		}
	}
	for _, file := range goSources(t) {
		inspectSource(t, f, file)
	}
	for _, want := range []string{"api", "worker", "importctl"} {
		if !f.binaries[want] {
			t.Errorf("cmd/%s with package main not found", want)
		}
	}
	if len(f.metrics) == 0 || len(f.paths) == 0 || len(f.ctlUses) == 0 {
		t.Fatalf("found no metrics (%d), paths (%d) or importctl commands (%d) in the Go sources", len(f.metrics), len(f.paths), len(f.ctlUses))
	}
	facts = f
	return f
}

// configEnv reads the `env:"NAME" envDefault:"..."` tags of pkg/config.Config.
func configEnv(t *testing.T) map[string]string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "pkg", "config", "config.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	ast.Inspect(file, func(n ast.Node) bool {
		st, ok := n.(*ast.StructType)
		if !ok {
			return true
		}
		for _, field := range st.Fields.List {
			if field.Tag == nil {
				continue
			}
			raw, err := strconv.Unquote(field.Tag.Value)
			if err != nil {
				t.Fatalf("config.go tag %s: %v", field.Tag.Value, err)
			}
			tag := reflect.StructTag(raw)
			name, _, _ := strings.Cut(tag.Get("env"), ",")
			if name == "" || name == "-" {
				continue
			}
			env[name] = tag.Get("envDefault")
		}
		return true
	})
	if len(env) < 5 {
		t.Fatalf("only %d env tags found in pkg/config/config.go: %v", len(env), env)
	}
	return env
}

func hasMainPackage(t *testing.T, dir string) bool {
	t.Helper()
	pkgs, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.PackageClauseOnly)
		if err == nil && f.Name.Name == "main" {
			return true
		}
	}
	return false
}

// goSources lists the module's non-test Go files outside deploy/.
func goSources(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch name := d.Name(); {
			case p == root:
			case strings.HasPrefix(name, "."), name == "bin", name == "deploy", name == "testdata", name == "vendor", name == "results":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func inspectSource(t *testing.T, f *codeFacts, path string) {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	inImportctl := filepath.Base(filepath.Dir(path)) == "importctl"
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			// prometheus.NewXxx(Opts{Name: "..."}, []string{labels...})
			if len(n.Args) > 0 {
				if name, ok := keyString(n.Args[0], "Name"); ok {
					var labels []string
					if len(n.Args) > 1 {
						labels = stringSlice(n.Args[1])
					}
					f.metrics[name] = labels
				}
			}
			// gin's e.GET("/path", ...)
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "GET" && len(n.Args) > 0 {
				if s, ok := stringLit(n.Args[0]); ok && strings.HasPrefix(s, "/") {
					f.paths[s] = true
				}
			}
		case *ast.CompositeLit:
			// Opts literal not passed straight to a constructor.
			if name, ok := keyString(n, "Name"); ok && strings.HasPrefix(name, "dataimport_") {
				if _, seen := f.metrics[name]; !seen {
					f.metrics[name] = nil
				}
			}
			// map[string]http.Handler{"/metrics": ...}
			if mt, ok := n.Type.(*ast.MapType); ok {
				if sel, ok := mt.Value.(*ast.SelectorExpr); ok && sel.Sel.Name == "Handler" {
					for _, el := range n.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							if s, ok := stringLit(kv.Key); ok && strings.HasPrefix(s, "/") {
								f.paths[s] = true
							}
						}
					}
				}
			}
			if inImportctl {
				if use, ok := keyString(n, "Use"); ok {
					f.ctlUses[strings.Fields(use)[0]] = true
				}
			}
		}
		return true
	})
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// keyString finds Key: "value" in a composite literal.
func keyString(e ast.Expr, key string) (string, bool) {
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		return "", false
	}
	for _, el := range cl.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if id, ok := kv.Key.(*ast.Ident); ok && id.Name == key {
			return stringLit(kv.Value)
		}
	}
	return "", false
}

func stringSlice(e ast.Expr) []string {
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	var out []string
	for _, el := range cl.Elts {
		if s, ok := stringLit(el); ok {
			out = append(out, s)
		}
	}
	return out
}

// ---------------------------------------------------------------- the Dockerfile

type dockerfile struct {
	env    map[string]string // final stage ENV
	cmd    []string
	expose []int
	user   string
	runs   []string
	copies []string
}

func parseDockerfile(t *testing.T) dockerfile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	cur := ""
	for _, l := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur == "") {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		lines = append(lines, cur+trimmed)
		cur = ""
	}
	var d dockerfile
	stages := 0
	for _, l := range lines {
		instr, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			stages++
			d.env, d.cmd, d.expose, d.user, d.copies = map[string]string{}, nil, nil, "", nil
		case "ENV":
			words := shellWords(rest)
			if len(words) == 2 && !strings.Contains(words[0], "=") {
				d.env[words[0]] = words[1]
				continue
			}
			for _, w := range words {
				k, v, ok := strings.Cut(w, "=")
				if !ok {
					t.Fatalf("Dockerfile: cannot parse ENV %q", rest)
				}
				d.env[k] = v
			}
		case "CMD":
			if err := json.Unmarshal([]byte(rest), &d.cmd); err != nil {
				t.Fatalf("Dockerfile: CMD must be exec form (JSON array), got %q", rest)
			}
		case "EXPOSE":
			for _, p := range strings.Fields(rest) {
				n, err := strconv.Atoi(strings.TrimSuffix(p, "/tcp"))
				if err != nil {
					t.Fatalf("Dockerfile: EXPOSE %q", p)
				}
				d.expose = append(d.expose, n)
			}
		case "USER":
			d.user = rest
		case "RUN":
			d.runs = append(d.runs, rest)
		case "COPY":
			d.copies = append(d.copies, rest)
		}
	}
	if stages < 2 {
		t.Errorf("Dockerfile: want a multi-stage build, found %d FROM", stages)
	}
	return d
}

// shellWords splits on spaces, honouring double and single quotes.
func shellWords(s string) []string {
	var out []string
	var b strings.Builder
	var quote rune
	in := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && (r == '"' || r == '\''):
			quote, in = r, true
		case quote == 0 && (r == ' ' || r == '\t'):
			if in {
				out = append(out, b.String())
				b.Reset()
				in = false
			}
		default:
			b.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, b.String())
	}
	return out
}

func TestDockerfile(t *testing.T) {
	c := code(t)
	d := parseDockerfile(t)
	for k := range d.env {
		if _, ok := c.env[k]; !ok {
			t.Errorf("Dockerfile: ENV %s is not an env tag in pkg/config/config.go", k)
		}
	}
	built := map[string]bool{}
	for _, r := range d.runs {
		for _, m := range regexp.MustCompile(`\./cmd/([A-Za-z0-9_-]+)`).FindAllStringSubmatch(r, -1) {
			built[m[1]] = true
			if !c.binaries[m[1]] {
				t.Errorf("Dockerfile builds ./cmd/%s, which does not exist", m[1])
			}
		}
	}
	for _, b := range []string{"api", "worker", "importctl"} { // the image's binaries; other cmd/ tools stay out
		if !built[b] {
			t.Errorf("Dockerfile does not build cmd/%s", b)
		}
		if !slices.ContainsFunc(d.copies, func(s string) bool {
			return strings.Contains(s, "/"+b+" ") && strings.HasSuffix(strings.TrimSpace(s), "/usr/local/bin/")
		}) {
			t.Errorf("Dockerfile final stage does not copy %s into /usr/local/bin/", b)
		}
	}
	if len(d.cmd) == 0 || d.cmd[0] != "api" {
		t.Errorf("Dockerfile: default CMD should be [\"api\"], got %q", d.cmd)
	}
	if u := strings.Split(d.user, ":")[0]; u == "" || u == "root" || u == "0" {
		t.Errorf("Dockerfile: final stage must run as a non-root USER, got %q", d.user)
	}
	env := merge(c.env, d.env)
	for _, v := range []string{"HTTP_ADDR", "WORKER_HTTP_ADDR"} {
		host, port := splitAddr(t, "Dockerfile "+v, env[v])
		if isLoopback(host) {
			t.Errorf("Dockerfile: %s=%q listens on loopback, unreachable from outside the container", v, env[v])
		}
		if !slices.Contains(d.expose, port) {
			t.Errorf("Dockerfile: EXPOSE %v lacks %s port %d", d.expose, v, port)
		}
	}
	// The build context must keep what the build needs.
	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(ignore), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "!") {
			continue
		}
		for _, need := range []string{"go.mod", "go.sum", "cmd", "pkg", "jobs", "migrations", "migrations/0001.sql"} {
			if ok, _ := filepath.Match(strings.TrimSuffix(strings.TrimPrefix(l, "/"), "/"), need); ok {
				t.Errorf(".dockerignore pattern %q excludes %s, which the build needs", l, need)
			}
		}
	}
}

// ---------------------------------------------------------------- YAML

type yamlDoc struct {
	file string
	m    map[string]any
}

func yamlDocs(t *testing.T) []yamlDoc {
	t.Helper()
	var docs []yamlDoc
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p == "local" {
			return filepath.SkipDir
		}
		if d.IsDir() || (!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for i := 0; ; i++ {
			var m map[string]any
			err := dec.Decode(&m)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Errorf("%s: document %d: %v", p, i, err)
				break
			}
			if m != nil {
				docs = append(docs, yamlDoc{file: p, m: m})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 5 {
		t.Fatalf("found only %d YAML documents under deploy/", len(docs))
	}
	return docs
}

// small accessors over decoded YAML
func mp(v any) map[string]any { m, _ := v.(map[string]any); return m }
func sl(v any) []any          { s, _ := v.([]any); return s }
func str(v any) string {
	if v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}
func get(v any, path ...string) any {
	for _, p := range path {
		v = mp(v)[p]
	}
	return v
}
func strs(v any) []string {
	var out []string
	for _, x := range sl(v) {
		out = append(out, str(x))
	}
	return out
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func splitAddr(t *testing.T, where, addr string) (string, int) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%s: listen address %q: %v", where, addr, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("%s: listen address %q: port %q", where, addr, port)
	}
	return host, n
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// appContainer is one of our processes in a manifest, with what it was given.
type appContainer struct {
	where    string
	argv     []string
	env      map[string]string // effective, after defaults, image ENV, ConfigMaps, manifest
	ports    []int             // container-side ports
	named    map[string]int
	probes   [][2]string // path, port (number or name)
	grace    time.Duration
	graceSet bool
}

func (a appContainer) binary() string {
	if len(a.argv) == 0 {
		return ""
	}
	return filepath.Base(a.argv[0])
}

// checkEnvNames reports names not read by pkg/config.
func checkEnvNames(t *testing.T, where string, names []string) {
	t.Helper()
	c := code(t)
	for _, n := range names {
		if _, ok := c.env[n]; !ok {
			t.Errorf("%s: env var %s is not an env tag in pkg/config/config.go (renamed or invented?)", where, n)
		}
	}
}

func isOurImage(image string) bool {
	image, _, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image == "dataimport" || strings.HasSuffix(image, "/dataimport") || strings.HasPrefix(image, "${DATAIMPORT_IMAGE")
}

// checkApp applies the rules every api/worker/importctl container must meet.
func checkApp(t *testing.T, a appContainer) {
	t.Helper()
	c := code(t)
	bin := a.binary()
	if !c.binaries[bin] {
		t.Errorf("%s: runs %q, which is not a cmd/<name> binary %v", a.where, bin, keys(c.binaries))
		return
	}
	if bin == "importctl" {
		if len(a.argv) < 2 || !c.ctlUses[a.argv[1]] {
			t.Errorf("%s: importctl subcommand %q not found among %v", a.where, a.argv[1:], keys(c.ctlUses))
		}
		return
	}
	addrVar := map[string]string{"api": "HTTP_ADDR", "worker": "WORKER_HTTP_ADDR"}[bin]
	if addrVar == "" {
		return
	}
	host, port := splitAddr(t, a.where+" "+addrVar, a.env[addrVar])
	if isLoopback(host) {
		t.Errorf("%s: %s=%q listens on loopback; probes and scrapes from outside the container cannot reach it", a.where, addrVar, a.env[addrVar])
	}
	if !slices.Contains(a.ports, port) {
		t.Errorf("%s: container ports %v do not include %d, the port of %s=%q", a.where, a.ports, port, addrVar, a.env[addrVar])
	}
	for _, p := range a.probes {
		if !c.paths[p[0]] {
			t.Errorf("%s: probe/scrape path %q is not served by the code (served: %v)", a.where, p[0], keys(c.paths))
		}
		n, err := strconv.Atoi(p[1])
		if err != nil {
			var ok bool
			if n, ok = a.named[p[1]]; !ok {
				t.Errorf("%s: probe port %q is not a named container port", a.where, p[1])
				continue
			}
		}
		if n != port {
			t.Errorf("%s: probe %s on port %d, but %s listens on %d", a.where, p[0], n, bin, port)
		}
	}
	if a.graceSet {
		shutdown, err := time.ParseDuration(a.env["SHUTDOWN_TIMEOUT"])
		if err != nil {
			t.Errorf("%s: SHUTDOWN_TIMEOUT=%q: %v", a.where, a.env["SHUTDOWN_TIMEOUT"], err)
		} else if a.grace < shutdown {
			t.Errorf("%s: grace period %v is shorter than SHUTDOWN_TIMEOUT %v; in-flight work would be killed", a.where, a.grace, shutdown)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ---------------------------------------------------------------- compose

func TestCompose(t *testing.T) {
	c := code(t)
	d := parseDockerfile(t)
	var compose *yamlDoc
	for _, doc := range yamlDocs(t) {
		if doc.m["services"] != nil && doc.m["apiVersion"] == nil {
			compose = &doc
		}
	}
	if compose == nil {
		t.Fatal("no compose file (a YAML document with services:) under deploy/")
	}
	services := mp(compose.m["services"])
	apps := map[string]appContainer{}
	for name, raw := range services {
		svc := mp(raw)
		if svc["build"] == nil && !isOurImage(str(svc["image"])) {
			continue // postgres, redis: their own variables
		}
		where := compose.file + " service " + name
		a := appContainer{where: where, argv: strs(svc["command"]), named: map[string]int{}}
		if svc["entrypoint"] != nil {
			a.argv = append(strs(svc["entrypoint"]), a.argv...)
		}
		if len(a.argv) == 0 {
			a.argv = d.cmd
		}
		env := map[string]string{}
		switch e := svc["environment"].(type) {
		case map[string]any:
			for k, v := range e {
				env[k] = str(v)
			}
		case []any:
			for _, kv := range e {
				k, v, _ := strings.Cut(str(kv), "=")
				env[k] = v
			}
		}
		checkEnvNames(t, where, keys(env))
		a.env = merge(c.env, d.env, env)
		for _, p := range sl(svc["ports"]) {
			spec := str(p)
			if m := mp(p); m != nil {
				spec = str(m["target"])
			}
			spec, _, _ = strings.Cut(spec, "/")
			parts := strings.Split(spec, ":")
			n, err := strconv.Atoi(parts[len(parts)-1])
			if err != nil {
				t.Errorf("%s: port %q", where, spec)
			}
			a.ports = append(a.ports, n)
		}
		for _, p := range strs(svc["expose"]) {
			n, err := strconv.Atoi(strings.TrimSuffix(p, "/tcp"))
			if err != nil {
				t.Errorf("%s: expose %q", where, p)
			}
			a.ports = append(a.ports, n)
		}
		if g := str(svc["stop_grace_period"]); g != "" {
			dur, err := time.ParseDuration(g)
			if err != nil {
				t.Errorf("%s: stop_grace_period %q: %v", where, g, err)
			}
			a.grace, a.graceSet = dur, true
		}
		apps[name] = a
	}
	migrations := ""
	for name, a := range apps {
		if a.binary() == "importctl" && len(a.argv) > 1 && a.argv[1] == "migrate" {
			migrations = name
		}
	}
	if migrations == "" {
		t.Errorf("%s: no service runs importctl migrate", compose.file)
	}
	seen := map[string]bool{}
	for name, a := range apps {
		checkApp(t, a)
		seen[a.binary()] = true
		if b := a.binary(); b == "api" || b == "worker" {
			cond := str(get(services[name], "depends_on", migrations, "condition"))
			if cond != "service_completed_successfully" {
				t.Errorf("%s: should depend on %s with condition service_completed_successfully, got %q", a.where, migrations, cond)
			}
		}
		if a.binary() == "worker" {
			if r := str(get(services[name], "deploy", "replicas")); r != "3" {
				t.Errorf("%s: deploy.replicas = %q, want 3", a.where, r)
			}
		}
	}
	for _, b := range []string{"api", "worker", "importctl"} {
		if !seen[b] {
			t.Errorf("%s: no service runs %s", compose.file, b)
		}
	}
	if hc := get(services["postgres"], "healthcheck"); hc == nil {
		t.Errorf("%s: postgres has no healthcheck", compose.file)
	}
}

// ---------------------------------------------------------------- Kubernetes

func TestKubernetes(t *testing.T) {
	c := code(t)
	d := parseDockerfile(t)
	var objs []yamlDoc
	for _, doc := range yamlDocs(t) {
		if doc.m["kind"] != nil {
			objs = append(objs, doc)
		}
	}
	configMaps := map[string]map[string]string{}
	secrets := map[string]map[string]bool{}
	var kustomization *yamlDoc
	for i, o := range objs {
		name := str(get(o.m, "metadata", "name"))
		switch str(o.m["kind"]) {
		case "ConfigMap":
			data := map[string]string{}
			for k, v := range mp(o.m["data"]) {
				data[k] = str(v)
			}
			checkEnvNames(t, o.file+" ConfigMap "+name, keys(data))
			configMaps[name] = data
		case "Secret":
			ks := map[string]bool{}
			for _, field := range []string{"data", "stringData"} {
				for k := range mp(o.m[field]) {
					ks[k] = true
				}
			}
			checkEnvNames(t, o.file+" Secret "+name, keys(ks))
			secrets[name] = ks
		case "Kustomization":
			kustomization = &objs[i]
		}
	}

	type workload struct {
		kind, name string
		labels     map[string]any
		containers []appContainer
	}
	var workloads []workload
	for _, o := range objs {
		kind := str(o.m["kind"])
		var pod map[string]any
		switch kind {
		case "Deployment", "StatefulSet", "DaemonSet", "Job":
			pod = mp(get(o.m, "spec", "template"))
		case "CronJob":
			pod = mp(get(o.m, "spec", "jobTemplate", "spec", "template"))
		default:
			continue
		}
		name := str(get(o.m, "metadata", "name"))
		w := workload{kind: kind, name: name, labels: mp(get(pod, "metadata", "labels"))}
		spec := mp(pod["spec"])
		var grace time.Duration
		graceSet := false
		if g := spec["terminationGracePeriodSeconds"]; g != nil {
			n, err := strconv.Atoi(str(g))
			if err != nil {
				t.Errorf("%s %s: terminationGracePeriodSeconds %v", o.file, name, g)
			}
			grace, graceSet = time.Duration(n)*time.Second, true
		}
		for _, rc := range append(sl(spec["initContainers"]), sl(spec["containers"])...) {
			ctr := mp(rc)
			where := fmt.Sprintf("%s %s/%s container %s", o.file, kind, name, str(ctr["name"]))
			if !isOurImage(str(ctr["image"])) {
				continue
			}
			a := appContainer{where: where, named: map[string]int{}, grace: grace, graceSet: graceSet && kind != "Job"}
			if cmd := strs(ctr["command"]); len(cmd) > 0 {
				a.argv = append(cmd, strs(ctr["args"])...)
			} else if args := strs(ctr["args"]); len(args) > 0 {
				a.argv = args // the image has no ENTRYPOINT: args replace CMD
			} else {
				a.argv = d.cmd
			}
			fromMaps := map[string]string{}
			for _, ef := range sl(ctr["envFrom"]) {
				if ref := str(get(ef, "configMapRef", "name")); ref != "" {
					cm, ok := configMaps[ref]
					if !ok {
						t.Errorf("%s: envFrom ConfigMap %q not defined in deploy/k8s", where, ref)
					}
					fromMaps = merge(fromMaps, cm)
				}
				if ref := str(get(ef, "secretRef", "name")); ref != "" {
					s, ok := secrets[ref]
					if !ok {
						t.Errorf("%s: envFrom Secret %q not defined in deploy/k8s", where, ref)
					}
					for k := range s {
						fromMaps[k] = ""
					}
				}
			}
			env := map[string]string{}
			for _, re := range sl(ctr["env"]) {
				e := mp(re)
				n := str(e["name"])
				env[n] = str(e["value"])
				if ref := mp(get(e, "valueFrom", "configMapKeyRef")); ref != nil {
					v, ok := configMaps[str(ref["name"])][str(ref["key"])]
					if !ok {
						t.Errorf("%s: env %s refers to ConfigMap %s key %s, which does not exist", where, n, ref["name"], ref["key"])
					}
					env[n] = v
				}
				if ref := mp(get(e, "valueFrom", "secretKeyRef")); ref != nil {
					if !secrets[str(ref["name"])][str(ref["key"])] {
						t.Errorf("%s: env %s refers to Secret %s key %s, which does not exist", where, n, ref["name"], ref["key"])
					}
					checkEnvNames(t, where+" secretKeyRef", []string{str(ref["key"])})
				}
			}
			checkEnvNames(t, where, keys(env))
			a.env = merge(c.env, d.env, fromMaps, env)
			for _, rp := range sl(ctr["ports"]) {
				p := mp(rp)
				n, err := strconv.Atoi(str(p["containerPort"]))
				if err != nil {
					t.Errorf("%s: containerPort %v", where, p["containerPort"])
				}
				a.ports = append(a.ports, n)
				if pn := str(p["name"]); pn != "" {
					a.named[pn] = n
				}
			}
			for _, probe := range []string{"startupProbe", "readinessProbe", "livenessProbe"} {
				if hg := mp(get(ctr, probe, "httpGet")); hg != nil {
					a.probes = append(a.probes, [2]string{str(hg["path"]), str(hg["port"])})
				}
			}
			ann := mp(get(pod, "metadata", "annotations"))
			if str(ann["prometheus.io/scrape"]) == "true" && len(sl(spec["containers"])) == 1 {
				a.probes = append(a.probes, [2]string{str(ann["prometheus.io/path"]), str(ann["prometheus.io/port"])})
			}
			if bin := a.binary(); (bin == "api" || bin == "worker") && kind == "Deployment" {
				if get(ctr, "readinessProbe", "httpGet", "path") != "/readyz" || get(ctr, "livenessProbe", "httpGet", "path") != "/healthz" {
					t.Errorf("%s: want readiness /readyz and liveness /healthz", where)
				}
				if !graceSet {
					t.Errorf("%s: set terminationGracePeriodSeconds >= SHUTDOWN_TIMEOUT", where)
				}
				if get(ctr, "resources", "requests") == nil {
					t.Errorf("%s: no resource requests", where)
				}
			}
			checkApp(t, a)
			w.containers = append(w.containers, a)
		}
		workloads = append(workloads, w)
	}

	byBinary := map[string]workload{}
	for _, w := range workloads {
		for _, a := range w.containers {
			if a.binary() == "importctl" && len(a.argv) > 1 && a.argv[1] == "migrate" && w.kind == "Job" {
				byBinary["migrate"] = w
			}
			if w.kind == "Deployment" {
				byBinary[a.binary()] = w
			}
		}
	}
	for _, want := range []string{"api", "worker", "migrate"} {
		if _, ok := byBinary[want]; !ok {
			t.Errorf("deploy/k8s: no %s workload (Deployment running api/worker, Job running importctl migrate)", want)
		}
	}

	selects := func(sel map[string]any, labels map[string]any) bool {
		if len(sel) == 0 {
			return false
		}
		for k, v := range sel {
			if str(labels[k]) != str(v) {
				return false
			}
		}
		return true
	}
	deploymentNamed := func(name string) *workload {
		for i := range workloads {
			if workloads[i].kind == "Deployment" && workloads[i].name == name {
				return &workloads[i]
			}
		}
		return nil
	}
	pdbs := map[string]bool{}
	for _, o := range objs {
		kind, name := str(o.m["kind"]), str(get(o.m, "metadata", "name"))
		where := o.file + " " + kind + " " + name
		switch kind {
		case "Service":
			sel := mp(get(o.m, "spec", "selector"))
			var target *workload
			for i := range workloads {
				if selects(sel, workloads[i].labels) {
					target = &workloads[i]
				}
			}
			if target == nil {
				t.Errorf("%s: selector %v matches no workload", where, sel)
				continue
			}
			for _, rp := range sl(get(o.m, "spec", "ports")) {
				tp := str(get(rp, "targetPort"))
				if tp == "" {
					tp = str(get(rp, "port"))
				}
				found := false
				for _, a := range target.containers {
					if _, ok := a.named[tp]; ok || slices.Contains(a.ports, atoi(tp)) {
						found = true
					}
				}
				if !found {
					t.Errorf("%s: targetPort %q is not a port of %s", where, tp, target.name)
				}
			}
		case "PodDisruptionBudget":
			sel := mp(get(o.m, "spec", "selector", "matchLabels"))
			for _, w := range workloads {
				if w.kind == "Deployment" && selects(sel, w.labels) {
					pdbs[w.name] = true
				}
			}
		case "PodMonitor":
			for _, ep := range sl(get(o.m, "spec", "podMetricsEndpoints")) {
				port, path := str(get(ep, "port")), str(get(ep, "path"))
				if !c.paths[path] {
					t.Errorf("%s: path %q is not served by the code", where, path)
				}
				found := false
				for _, w := range workloads {
					for _, a := range w.containers {
						_, ok := a.named[port]
						found = found || ok
					}
				}
				if !found {
					t.Errorf("%s: port %q is not a named port of any workload", where, port)
				}
			}
		case "ScaledObject":
			if deploymentNamed(str(get(o.m, "spec", "scaleTargetRef", "name"))) == nil {
				t.Errorf("%s: scaleTargetRef is not a Deployment in deploy/k8s", where)
			}
			if n := atoi(str(get(o.m, "spec", "minReplicaCount"))); n < 1 {
				t.Errorf("%s: minReplicaCount %d: workers export the queue-depth gauge themselves, keep >= 1", where, n)
			}
			triggers := sl(get(o.m, "spec", "triggers"))
			if len(triggers) == 0 {
				t.Errorf("%s: no triggers", where)
			}
			for _, tr := range triggers {
				if str(get(tr, "type")) != "prometheus" {
					continue
				}
				q := str(get(tr, "metadata", "query"))
				if !strings.Contains(q, "dataimport_queue_depth") {
					t.Errorf("%s: query %q does not use dataimport_queue_depth", where, q)
				}
				checkPromQL(t, where, q)
			}
		case "HorizontalPodAutoscaler":
			if deploymentNamed(str(get(o.m, "spec", "scaleTargetRef", "name"))) == nil {
				t.Errorf("%s: scaleTargetRef is not a Deployment in deploy/k8s", where)
			}
			for _, m := range sl(get(o.m, "spec", "metrics")) {
				if n := str(get(m, "external", "metric", "name")); n != "" {
					if _, ok := c.metrics[n]; !ok {
						t.Errorf("%s: external metric %q is not registered in the Go sources", where, n)
					}
				}
			}
		}
	}
	for _, name := range []string{byBinary["api"].name, byBinary["worker"].name} {
		if name != "" && !pdbs[name] {
			t.Errorf("deploy/k8s: no PodDisruptionBudget selects Deployment %s", name)
		}
	}

	// kustomization.yaml lists files that exist, and every manifest but the optional ones.
	if kustomization == nil {
		t.Fatal("deploy/k8s/kustomization.yaml missing")
	}
	dir := filepath.Dir(kustomization.file)
	listed := map[string]bool{}
	for _, r := range strs(kustomization.m["resources"]) {
		listed[r] = true
		if _, err := os.Stat(filepath.Join(dir, r)); err != nil {
			t.Errorf("%s: resource %s: %v", kustomization.file, r, err)
		}
	}
	optional := map[string]bool{"hpa-external-metrics.yaml": true, "podmonitor.yaml": true, "kustomization.yaml": true}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		if b := filepath.Base(f); !listed[b] && !optional[b] {
			t.Errorf("%s does not list %s", kustomization.file, b)
		}
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// ---------------------------------------------------------------- metrics

var (
	metricRef = regexp.MustCompile(`\bdataimport_[a-z0-9_]+`)
	byClause  = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	matcher   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)
)

// checkPromQL requires every dataimport_* series to be a registered metric
// (or a histogram's _bucket/_sum/_count) and every label to be one of theirs.
func checkPromQL(t *testing.T, where, expr string) {
	t.Helper()
	c := code(t)
	labels := map[string]bool{"le": true, "namespace": true, "pod": true, "instance": true, "job": true, "container": true}
	refs := metricRef.FindAllString(expr, -1)
	if len(refs) == 0 {
		t.Errorf("%s: query %q uses no dataimport_ metric", where, expr)
	}
	for _, ref := range refs {
		name := ref
		if _, ok := c.metrics[name]; !ok {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base := strings.TrimSuffix(ref, suffix); base != ref {
					if _, ok := c.metrics[base]; ok {
						name = base
					}
				}
			}
		}
		ls, ok := c.metrics[name]
		if !ok {
			t.Errorf("%s: metric %q is not registered in the Go sources (Name: \"...\"); known: %v", where, ref, keys(c.metrics))
			continue
		}
		for _, l := range ls {
			labels[l] = true
		}
	}
	var used []string
	for _, m := range byClause.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			used = append(used, strings.TrimSpace(l))
		}
	}
	for _, m := range matcher.FindAllStringSubmatch(expr, -1) {
		used = append(used, m[1])
	}
	for _, l := range used {
		if l != "" && !labels[l] {
			t.Errorf("%s: label %q in %q is not a label of the metrics it queries", where, l, expr)
		}
	}
}

func TestDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("grafana", "dataimport-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	if str(dash["title"]) == "" || len(sl(dash["panels"])) == 0 {
		t.Fatal("dashboard has no title or no panels")
	}
	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "definition") {
					exprs = append(exprs, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(dash)
	if len(exprs) < 8 {
		t.Fatalf("dashboard has only %d queries", len(exprs))
	}
	used := map[string]bool{}
	for _, e := range exprs {
		checkPromQL(t, "dashboard", e)
		for _, m := range metricRef.FindAllString(e, -1) {
			used[m] = true
		}
	}
	// The panels the operators rely on (deploy/README.md "What to watch").
	for _, m := range []string{"dataimport_http_request_duration_seconds_bucket", "dataimport_http_requests_total",
		"dataimport_concurrency_limit_rejections_total", "dataimport_accounts_total",
		"dataimport_account_job_duration_seconds_bucket", "dataimport_queue_depth", "dataimport_accounts_in_progress",
		"dataimport_scheduled_accounts_waiting", "dataimport_welcome_emails_total"} {
		if !used[m] {
			t.Errorf("dashboard does not chart %s", m)
		}
	}
}
