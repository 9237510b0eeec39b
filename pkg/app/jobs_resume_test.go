package app_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// cutUpload sends a keyed job upload over a raw connection to the real
// server and hangs up after the first n bytes of its body (Content-Length
// announces the whole body), as a partner whose network dropped.
func (p *pipeline) cutUpload(t *testing.T, key string, body []byte, n int, gz bool) {
	t.Helper()
	u, err := url.Parse(p.Server.URL)
	must(t, err)
	conn, err := net.Dial("tcp", u.Host)
	must(t, err)
	defer conn.Close()
	var h strings.Builder
	fmt.Fprintf(&h, "POST %s?%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-ndjson\r\n", jobsURL, jobQuery, u.Host)
	fmt.Fprintf(&h, "Authorization: Token %s\r\nIdempotency-Key: %s\r\nContent-Length: %d\r\n", p.token, key, len(body))
	if gz {
		h.WriteString("Content-Encoding: gzip\r\n")
	}
	h.WriteString("\r\n")
	_, err = io.WriteString(conn, h.String())
	must(t, err)
	_, err = conn.Write(body[:n])
	must(t, err)
}

// uploadKeyed posts the whole body with the key through the server's HTTP
// client, waiting out 409 (the cut upload not yet known to be lost) and 429
// (the organisation's upload slots still held by cut uploads whose handlers
// are finishing), as a partner's client waits out both.
func (p *pipeline) uploadKeyed(t *testing.T, key string, body []byte, gz bool) *http.Response {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodPost, p.Server.URL+jobsURL+"?"+jobQuery, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-ndjson")
		req.Header.Set("Authorization", "Token "+p.token)
		req.Header.Set("Idempotency-Key", key)
		if gz {
			req.Header.Set("Content-Encoding", "gzip")
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		if resp.StatusCode != http.StatusConflict && resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			return resp
		}
		t.Logf("%s after %s", resp.Status, time.Since(deadline.Add(-30*time.Second)))
		resp.Body.Close()
	}
}

// waitJobFailedLost waits until the only job of key is FAILED upload_lost.
func (p *pipeline) waitJobFailedLost(t *testing.T, key string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if p.count(`SELECT count(*) FROM import_jobs WHERE idempotency_key = ? AND state = 'FAILED' AND error->>'code' = 'upload_lost'`, key) == 1 {
			return
		}
		if time.Now().After(deadline) {
			var state, code string
			_ = p.DB.Gorm().Raw(`SELECT state, coalesce(error->>'code', '') FROM import_jobs WHERE idempotency_key = ?`, key).Row().Scan(&state, &code)
			t.Fatalf("job of key %s is %s %q after the cut, want FAILED upload_lost", key, state, code)
		}
	}
}

// TestJobUploadCutResumes: a keyed upload whose connection is cut at any
// byte of its body fails upload_lost (not parse_error: the body was not
// refused, it stopped coming), nothing of it is kept, and the retry with
// the same key and body resumes the same job, again after every cut; the
// job completes with each account created once. Before, the first cut
// failed the job parse_error with no digest and every retry got 422
// "used with another body".
func TestJobUploadCutResumes(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	const n = 200
	plain := []byte(p.jobBody(0, n))
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	_, _ = zw.Write(plain)
	must(t, zw.Close())
	gzipped := zb.Bytes()
	lineEnd := bytes.IndexByte(plain, '\n') + 1

	var id int64
	for _, c := range []struct {
		name string
		body []byte
		gz   bool
		at   int
	}{
		{"no body byte", plain, false, 0},
		{"one byte", plain, false, 1},
		{"a line boundary", plain, false, lineEnd},
		{"mid-line", plain, false, len(plain) / 2},
		{"last byte missing", plain, false, len(plain) - 1},
		{"gzip, no body byte", gzipped, true, 0},
		{"gzip, inside its header", gzipped, true, 5},
		{"gzip mid-stream", gzipped, true, len(gzipped) / 2},
		{"gzip trailer missing", gzipped, true, len(gzipped) - 4},
	} {
		p.cutUpload(t, "cut-1", c.body, c.at, c.gz)
		p.waitJobFailedLost(t, "cut-1")
		if got := p.count(`SELECT id FROM import_jobs WHERE idempotency_key = 'cut-1'`); id != 0 && got != id {
			t.Fatalf("cut %s: the key names job %d, was %d", c.name, got, id)
		} else {
			id = got
		}
		if k := p.count(`SELECT count(*) FROM import_job_records`); k != 0 {
			t.Fatalf("cut %s: %d lines of a lost upload kept", c.name, k)
		}
		if k := p.count(`SELECT count(*) FROM accounts`); k != 0 {
			t.Fatalf("cut %s: %d accounts created from a lost upload", c.name, k)
		}
	}
	resp := p.uploadKeyed(t, "cut-1", plain, false)
	b, _ := io.ReadAll(bufio.NewReader(resp.Body))
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(b), fmt.Sprintf(`"id":%d`, id)) {
		t.Fatalf("retry after the cuts: %d %s (want 202 for job %d)", resp.StatusCode, b, id)
	}
	// The same body again (gzipped: the digest is of the NDJSON) is a
	// replay; another body under the key is refused.
	resp = p.uploadKeyed(t, "cut-1", gzipped, true)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %v", resp.StatusCode, resp.Header)
	}
	resp = p.uploadKeyed(t, "cut-1", plain[:lineEnd], false)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("same key, another body: %d", resp.StatusCode)
	}
	if k := p.count(`SELECT count(*) FROM import_jobs`); k != 1 {
		t.Fatalf("%d jobs, want 1", k)
	}
	v := p.waitJob(p.token, id, time.Minute)
	checkCounters(t, v, map[string]int64{"received": n, "created": n})
	p.assertJobAccountsOnce(n)
}

// TestJobKeyExpires: an Idempotency-Key names its job for IDEMPOTENCY_TTL
// (24 h by default), as any other request's: after that the same key and
// body make a new job, and the old job stays as it was.
func TestJobKeyExpires(t *testing.T) {
	p := newPipeline(t)
	body := []byte(p.jobBody(0, 3))
	resp := p.uploadKeyed(t, "old-key", body, false)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	first := p.count(`SELECT id FROM import_jobs`)
	if err := p.DB.Gorm().Exec(`UPDATE import_jobs SET created_at = now() - interval '25 hours'`).Error; err != nil {
		t.Fatal(err)
	}
	resp = p.uploadKeyed(t, "old-key", body, false)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("after the TTL: %d %v", resp.StatusCode, resp.Header)
	}
	if k := p.count(`SELECT count(*) FROM import_jobs`); k != 2 {
		t.Fatalf("%d jobs, want the old and a new one", k)
	}
	if k := p.count(`SELECT count(*) FROM import_jobs WHERE id = ? AND state <> 'RECEIVING'`, first); k != 1 {
		t.Fatal("the old job was changed")
	}
}
