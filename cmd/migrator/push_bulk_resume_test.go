package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// cutter is a TCP proxy to the API that cuts the first cuts connections
// carrying a job upload: it forwards the request's header and then only
// the next offset(i) bytes of it, and closes both sides, as a network that
// drops mid-body. Everything else passes through.
type cutter struct {
	ln     net.Listener
	target string
	offset func(i int, header int) int // bytes of the request to forward, counted from its start

	mu   sync.Mutex
	cuts int // cuts still to make
	made []int
}

func newCutter(t *testing.T, target string, cuts int, offset func(i, header int) int) *cutter {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, target: u.Host, offset: offset, cuts: cuts}
	t.Cleanup(func() { _ = ln.Close() })
	go c.serve()
	return c
}

func (c *cutter) URL() string { return "http://" + c.ln.Addr().String() }

func (c *cutter) serve() {
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return
		}
		go c.handle(conn)
	}
}

func (c *cutter) handle(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", c.target)
	if err != nil {
		return
	}
	defer server.Close()
	br := bufio.NewReader(client)
	// The request's header, up to its blank line.
	var header bytes.Buffer
	for {
		line, err := br.ReadBytes('\n')
		header.Write(line)
		if err != nil {
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			break
		}
	}
	upload := bytes.HasPrefix(header.Bytes(), []byte("POST /v1/data-import/jobs/"))
	c.mu.Lock()
	cut := upload && c.cuts > 0
	n := -1
	if cut {
		n = c.offset(len(c.made), header.Len())
		c.cuts--
		c.made = append(c.made, n)
	}
	c.mu.Unlock()
	go func() { _, _ = io.Copy(client, server) }()
	if !cut {
		_, _ = server.Write(header.Bytes())
		_, _ = io.Copy(server, br)
		return
	}
	if n < header.Len() {
		_, _ = server.Write(header.Bytes()[:n])
	} else {
		_, _ = server.Write(header.Bytes())
		_, _ = io.CopyN(server, br, int64(n-header.Len()))
	}
	// Hang up on both: the API sees the body stop, the migrator a broken connection.
}

func (c *cutter) madeCuts() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.made...)
}

// TestPushBulkResumesAfterCuts: push --bulk against the real API through a
// network that cuts the upload's connection at a random byte (in its
// header, in its gzip body, at its last bytes) several times in a row. The
// migrator retries under the part's Idempotency-Key each time, the API
// resumes the cut job, and the push completes: one job, every account
// created exactly once. Before, the first cut failed the job parse_error
// and the retry's 422 stopped the migration.
func TestPushBulkResumesAfterCuts(t *testing.T) {
	defer func(b time.Duration) { uploadRetryBase = b }(uploadRetryBase)
	uploadRetryBase = 50 * time.Millisecond
	e := newEnv(t)
	const accounts = 300
	file := e.writeFile("accounts.ndjson", validLines(t, "CUT", accounts))
	// The gzip body's size as the migrator sends it (BestSpeed), to cut inside it.
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var zb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zb, gzip.BestSpeed)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	gzLen := zb.Len()
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	const cuts = 6
	cut := newCutter(t, e.st.Server.URL, cuts, func(i, header int) int {
		switch i {
		case 0:
			return header / 2 // inside the header: no job yet
		case 1:
			return header // the header, no body byte
		case cuts - 1:
			return header + gzLen - 2 // all but the gzip trailer's end
		}
		return header + 1 + rng.IntN(gzLen-1)
	})
	report := filepath.Join(e.dir, "report.csv")
	var out, errs bytes.Buffer
	c := &cli{abort: context.Background(), stdout: &out, stderr: &syncWriter{w: &errs}}
	root := newRoot(c)
	root.SetArgs([]string{"push", file, "--team", "Migrations", "--report", report, "--bulk",
		"--api", cut.URL(), "--api-key", e.key, "--log-level", "info"})
	err = root.ExecuteContext(context.Background())
	t.Logf("seed %d, cuts at %v (gzip body %d bytes)", seed, cut.madeCuts(), gzLen)
	if err != nil {
		t.Fatalf("push --bulk: %v\n%s%s", err, out.String(), errs.String())
	}
	if made := cut.madeCuts(); len(made) != cuts {
		t.Fatalf("%d cuts made, want %d", len(made), cuts)
	}
	if !strings.Contains(out.String(), "accepted") {
		t.Fatalf("output: %s", out.String())
	}
	if n := e.count(`SELECT count(*) FROM import_jobs`); n != 1 {
		t.Fatalf("%d jobs, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM import_jobs WHERE state = 'COMPLETED' AND n_created = ?`, accounts); n != 1 {
		t.Fatal("the job did not complete with every account created")
	}
	e.checkAllImported(accounts)
}

// TestPushBulkNewKeyAfterCutAndRefusal: an API from before upload_lost
// failed a cut upload as a parse error and then refused its key as "used
// with another body". After a cut, that 422 means the job kept nothing:
// the part goes again under a new key, saved in the state file first, and
// the push completes with every account once. Without a cut, the same 422
// is final (the key really was used for something else).
func TestPushBulkNewKeyAfterCutAndRefusal(t *testing.T) {
	defer func(b time.Duration) { uploadRetryBase = b }(uploadRetryBase)
	uploadRetryBase = 20 * time.Millisecond
	e := newEnv(t)
	file := e.writeFile("accounts.ndjson", validLines(t, "OLD", 20))
	report := filepath.Join(e.dir, "report.csv")
	var mu sync.Mutex // the proxy's handlers run on their own goroutines
	var tries int
	var keys []string
	e.proxy.fake = func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/data-import/jobs/") {
			return false
		}
		mu.Lock()
		tries++
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		try := tries
		mu.Unlock()
		switch try {
		case 1:
			panic(http.ErrAbortHandler) // the connection drops: no answer
		case 2:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = io.WriteString(w, `{"detail":"This Idempotency-Key was used with another body; use a new key for a new upload.","code":"idempotency_key_reused"}`)
			return true
		}
		return false
	}
	if _, err := e.push(file, report, "--bulk"); err != nil {
		t.Fatalf("push --bulk: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if tries != 3 || keys[0] != keys[1] || keys[2] == keys[1] {
		t.Fatalf("%d tries with keys %v: want a cut, a refusal under the same key, then a new key", tries, keys)
	}
	if n := e.count(`SELECT count(*) FROM import_jobs WHERE idempotency_key = ?`, keys[2]); n != 1 {
		t.Fatalf("%d jobs under the new key", n)
	}
	e.checkAllImported(20)

	// The refusal with no cut before it is final.
	tries = 0
	e.proxy.fake = func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/data-import/jobs/") {
			return false
		}
		mu.Lock()
		tries++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = io.WriteString(w, `{"detail":"used with another body","code":"idempotency_key_reused"}`)
		return true
	}
	mu.Unlock()
	_, err := e.push(file, filepath.Join(e.dir, "report2.csv"), "--bulk")
	mu.Lock()
	if err == nil || !strings.Contains(err.Error(), "422") || tries != 1 {
		t.Fatalf("a refusal without a cut: %v after %d tries", err, tries)
	}
}
