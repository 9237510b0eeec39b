package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// demoSupplier is make run's demo supplier: market GB, products required,
// the demo catalogue loaded.
func demoSupplier(t *testing.T) (*testutil.Stack, testutil.Tenant) {
	t.Helper()
	st := testutil.NewStack(t)
	ctx := context.Background()
	st.Supplier("DEMO_ENERGY")
	on, gb := true, "GB"
	if _, err := st.DB.UpdateSupplierSettings(ctx, "DEMO_ENERGY", postgres.SupplierSettings{RequireProducts: &on, Market: &gb}); err != nil {
		t.Fatal(err)
	}
	raw, err := testutil.ReadRepoFile("deploy/local/demo_products.json")
	if err != nil {
		t.Fatal(err)
	}
	req, err := dataimport.DecodeProducts(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB.UpsertProducts(ctx, req.Products); err != nil {
		t.Fatal(err)
	}
	return st, st.Tenant("Demo Partner", "DEMO_ENERGY")
}

// copyExample writes the example export into a temporary directory with
// edits (file → old → new) applied, each of which must match.
func copyExample(t *testing.T, edits map[string][][2]string) string {
	t.Helper()
	src, dst := exampleDir(t), t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, ed := range edits[e.Name()] {
			if !strings.Contains(s, ed[0]) {
				t.Fatalf("%s has no %q", e.Name(), ed[0])
			}
			s = strings.ReplaceAll(s, ed[0], ed[1])
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

type attrCode struct{ Attr, Code string }

var invalidLine = regexp.MustCompile(`^output line (\d+) \(.*\): invalid: (\S*): .* \(([a-z0-9_]+)\)$`)

// offlineErrors runs migrator convert --validate with the demo supplier's
// market and catalogue: the output lines and each line's (attr, code)s.
func offlineErrors(t *testing.T, dir string) ([]string, map[int][]attrCode) {
	t.Helper()
	out, errs, _ := runOffline(t, append([]string{"convert", "--validate", "--market", "GB",
		"--catalogue", filepath.Join("..", "..", "deploy", "local", "demo_products.json")}, exampleArgs(dir)...)...)
	return parseInvalid(out, errs)
}

// parseInvalid reads convert's output lines and its stderr's "invalid"
// lines, by output line.
func parseInvalid(out, errs string) ([]string, map[int][]attrCode) {
	got := map[int][]attrCode{}
	for _, l := range strings.Split(errs, "\n") {
		if m := invalidLine.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			got[n] = append(got[n], attrCode{m[2], m[3]})
		}
	}
	return strings.Split(strings.TrimSpace(out), "\n"), got
}

// serverErrors validates one account through the API (validate-account,
// real HTTP): its (attr, code)s, none when accepted.
func serverErrors(t *testing.T, st *testutil.Stack, token, line string) []attrCode {
	t.Helper()
	r := st.As(token, http.MethodPost, "/v1/data-import/validate-account/", json.RawMessage(line))
	if r.Status == http.StatusOK {
		return nil
	}
	var env struct {
		Code   string                  `json:"code"`
		Errors []dataimport.FieldError `json:"errors"`
	}
	r.Decode(&env)
	if env.Code != dataimport.CodeAccountFailedValidation {
		t.Fatalf("validate-account: %d %s", r.Status, r.Body)
	}
	var out []attrCode
	for _, fe := range env.Errors {
		out = append(out, attrCode{fe.Attr, fe.Code})
	}
	return out
}

func sortedSet(s []attrCode) []attrCode {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b attrCode) int { return strings.Compare(a.Attr+" "+a.Code, b.Attr+" "+b.Code) })
	return slices.Compact(s)
}

// Issue: convert --validate passed what the server refuses (neither the
// supplier's market rules nor the catalogue). Every kind of refusal, made
// in the example export's CSV files, is refused offline (convert --validate
// --market GB --catalogue demo_products.json) with exactly the (attr, code)s
// the server answers for the same account, and every account the server
// accepts passes offline.
func TestConvertValidateOfflineEqualsServer(t *testing.T) {
	st, ten := demoSupplier(t)
	token := ten.Token
	for _, tc := range []struct {
		name  string
		edits map[string][][2]string
		want  string // a code both must report
	}{
		{"as shipped", nil, ""},
		{"bad MPAN", map[string][][2]string{"meters.csv": {{"1200023456790", "1200023456791"}}, "agreements.csv": {{"1200023456790", "1200023456791"}}}, dataimport.CodeInvalidMPAN},
		{"unknown product", map[string][][2]string{"agreements.csv": {{"E7-FIX-24M", "NO-SUCH-PRODUCT"}}}, dataimport.CodeProductNotFound},
		{"product without the fuel's tariff", map[string][][2]string{"agreements.csv": {{"100052;1200023456833;E7-VAR;", "100052;1200023456833;DEMO-VAR-24-02-G;"}}}, dataimport.CodeTariffFuelMismatch},
		{"product not yet available", map[string][][2]string{"agreements.csv": {{"100048;1200023456824;VAR-STD;", "100048;1200023456824;DEMO-VAR-24-02;"}}}, dataimport.CodeProductNotAvailable},
		{"bad phone", map[string][][2]string{"customers.csv": {{"07400 123456", "07400 12"}}}, "invalid_phone_number"},
		{"bad GB postcode", map[string][][2]string{"premises.csv": {{"BS1 4DJ", "BS1 4DJX"}}}, dataimport.CodeInvalidPostcode},
		{"sale date in the future", map[string][][2]string{"accounts.csv": {{"17.11.2022;31.10.2026", "17.11.2099;31.10.2026"}}}, "date_in_future"},
		{"balance out of range", map[string][][2]string{"accounts.csv": {{"12,50-;STANDARD", "999999999999999,00-;STANDARD"}}}, "max_whole_digits"},
		{"bad phone and unknown product", map[string][][2]string{"customers.csv": {{"07400 123456", "07400 12"}}, "agreements.csv": {{"E7-FIX-24M", "NO-SUCH-PRODUCT"}}}, "invalid_phone_number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, offline := offlineErrors(t, copyExample(t, tc.edits))
			if len(lines) != 5 {
				t.Fatalf("%d accounts converted, want 5", len(lines))
			}
			refused := 0
			for i, l := range lines {
				server, off := sortedSet(serverErrors(t, st, token, l)), sortedSet(offline[i+1])
				if !slices.Equal(server, off) {
					t.Errorf("account %d: server %v, offline %v\n%s", i+1, server, off, l)
				}
				if len(server) > 0 {
					refused++
				}
				if tc.want != "" && slices.ContainsFunc(server, func(e attrCode) bool { return e.Code == tc.want }) {
					tc.want = "" // seen
				}
			}
			if tc.edits == nil && refused > 0 || tc.edits != nil && refused != 1 {
				t.Errorf("%d accounts refused", refused)
			}
			if tc.want != "" {
				t.Errorf("no account refused with %s", tc.want)
			}
		})
	}
}

// convert --validate --remote asks the service (validate-accounts, one
// request for the batch) and reports exactly what the offline check does:
// the same lines, attrs and codes.
func TestConvertValidateRemoteEqualsOffline(t *testing.T) {
	st, ten := demoSupplier(t)
	dir := copyExample(t, map[string][][2]string{
		"customers.csv":  {{"07400 123456", "07400 12"}},
		"agreements.csv": {{"100052;1200023456833;E7-VAR;", "100052;1200023456833;DEMO-VAR-24-02-G;"}},
		"premises.csv":   {{"BS1 4DJ", "BS1 4DJX"}},
	})
	offLines, off := offlineErrors(t, dir)
	out, errs, err := runOffline(t, append([]string{"convert", "--validate", "--remote", "--api", st.Server.URL, "--api-key", ten.APIKey}, exampleArgs(dir)...)...)
	if !errors.Is(err, errSomeFailed) || !strings.Contains(errs, "2 written accounts invalid") {
		t.Fatalf("convert --remote: %v\n%s", err, errs)
	}
	remoteLines, remote := parseInvalid(out, errs)
	if !slices.Equal(offLines, remoteLines) {
		t.Fatalf("output differs:\n%v\n%v", offLines, remoteLines)
	}
	if len(off) != 2 || len(remote) != 2 {
		t.Fatalf("invalid accounts: offline %v, remote %v", off, remote)
	}
	for n, want := range off {
		if got := remote[n]; !slices.Equal(sortedSet(got), sortedSet(want)) {
			t.Errorf("output line %d: remote %v, offline %v", n, got, want)
		}
	}
}
