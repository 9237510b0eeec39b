package app_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// Hardening of bulk uploads: a stalled or hostile upload may hold no
// shared resource (a pooled connection) while it waits on the partner, and
// a small body may not turn into a large job.

const uploadQuery = "import_supplier=DEMO_ENERGY&operations_team_name=Migrations"

// stalledUpload opens an upload on a raw connection, sends its headers and
// the first bytes of a body announced far longer, then sends nothing more.
// The answer, once the server gives one, arrives on the channel.
type stalledUpload struct {
	conn   net.Conn
	answer chan stalledAnswer
}

type stalledAnswer struct {
	status int
	header http.Header
	body   string
	err    error
}

func (p *pipeline) stallUpload(t *testing.T, first string, headers ...string) *stalledUpload {
	t.Helper()
	u, err := url.Parse(p.Server.URL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	var req strings.Builder
	fmt.Fprintf(&req, "POST %s?%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Token %s\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n",
		jobsURL, uploadQuery, u.Host, p.token, 1<<20)
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(&req, "%s: %s\r\n", headers[i], headers[i+1])
	}
	req.WriteString("\r\n")
	req.WriteString(first)
	if _, err := conn.Write([]byte(req.String())); err != nil {
		t.Fatal(err)
	}
	s := &stalledUpload{conn: conn, answer: make(chan stalledAnswer, 1)}
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			s.answer <- stalledAnswer{err: err}
			return
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		_ = resp.Body.Close()
		s.answer <- stalledAnswer{status: resp.StatusCode, header: resp.Header, body: b.String()}
	}()
	t.Cleanup(func() { _ = conn.Close() })
	return s
}

// timedStatus reads an account's status and returns how long it took.
func (p *pipeline) timedStatus(t *testing.T, external string) time.Duration {
	t.Helper()
	start := time.Now()
	r := p.As(p.token, http.MethodGet, "/v1/data-import/account-transfer-status/DEMO_ENERGY/"+external+"/", nil)
	d := time.Since(start)
	if r.Status != http.StatusOK {
		t.Fatalf("status read: %d %s", r.Status, r.Body)
	}
	return d
}

func p99(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*99/100)]
}

// TestStalledUploadsLeaveStatusReadsAnswered: more stalled uploads than the
// pool has connections. Each used to hold a pooled connection while waiting
// for body bytes (four of them with DATABASE_MAX_CONNS=4 left a status read
// unanswered after 8 s), and their heartbeat kept their jobs alive for
// ever. Now status reads are answered at once, a stalled job's heartbeat
// stops (the reaper fails it), and the idle timeout answers each 408.
func TestStalledUploadsLeaveStatusReadsAnswered(t *testing.T) {
	const idle = 6 * time.Second
	p := newPipeline(t, func(c *testutil.StackConfig) {
		c.DatabaseMaxConns = 4
		c.UploadIdleTimeout = idle
		c.MaxUploadsPerOrg, c.MaxUploadsPerReplica = 16, 16
	})
	p.stage("EXT-STATUS")
	var before []time.Duration
	for range 50 {
		before = append(before, p.timedStatus(t, "EXT-STATUS"))
	}

	// Half keyed (resumable), half not; 32 bytes of a line each, then silence.
	var ups []*stalledUpload
	for i := range 6 {
		var h []string
		if i%2 == 0 {
			h = []string{"Idempotency-Key", fmt.Sprintf("stall-%d", i)}
		}
		ups = append(ups, p.stallUpload(t, `{"external_account_number":"STAL`, h...))
	}
	for p.count(`SELECT count(*) FROM import_jobs WHERE state = 'RECEIVING'`) < 6 {
		time.Sleep(10 * time.Millisecond)
	}
	stallStart := time.Now()
	var during []time.Duration
	for time.Since(stallStart) < idle-time.Second {
		d := p.timedStatus(t, "EXT-STATUS")
		if d > 2*time.Second {
			t.Fatalf("a status read took %v while uploads stalled", d)
		}
		during = append(during, d)
	}
	t.Logf("status read p99: %v before the stall (%d reads), %v during it (%d reads); pool of 4, 6 stalled uploads",
		p99(before), len(before), p99(during), len(during))

	// The stalled uploads' heartbeats stopped with their bytes: the reaper
	// (at a threshold of 2 s here) fails every one of them.
	// (Each beat once, for its first bytes, about a second in.)
	time.Sleep(time.Until(stallStart.Add(3500 * time.Millisecond)))
	reaped, err := p.DB.FailLostUploads(context.Background(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if reaped != 6 {
		t.Fatalf("the reaper failed %d stalled uploads, want 6", reaped)
	}

	for i, u := range ups {
		select {
		case a := <-u.answer:
			if a.err != nil {
				t.Fatalf("upload %d: %v", i, a.err)
			}
			if a.status != http.StatusRequestTimeout || !strings.Contains(a.body, `"code":"upload_idle_timeout"`) {
				t.Fatalf("upload %d: %d %s, want 408 upload_idle_timeout", i, a.status, a.body)
			}
		case <-time.After(idle + 10*time.Second):
			t.Fatalf("upload %d: no answer %v after its bytes stopped", i, idle+10*time.Second)
		}
	}
}

// TestStalledUploadIdleTimeoutKeepsKeyedJobResumable: cut off by the idle
// timeout, an upload without a key fails its job (nothing kept); one with
// an Idempotency-Key leaves its job for a retry with the key to take over.
func TestStalledUploadIdleTimeoutKeepsKeyedJobResumable(t *testing.T) {
	p := newPipeline(t, func(c *testutil.StackConfig) { c.UploadIdleTimeout = time.Second })
	plain := p.stallUpload(t, p.jobAccountLine("EXT-A")+"\n")
	keyed := p.stallUpload(t, p.jobAccountLine("EXT-B")+"\n", "Idempotency-Key", "resume-me")
	for _, u := range []*stalledUpload{plain, keyed} {
		a := <-u.answer
		if a.status != http.StatusRequestTimeout {
			t.Fatalf("stalled upload: %d %s", a.status, a.body)
		}
	}
	if n := p.count(`SELECT count(*) FROM import_jobs WHERE idempotency_key IS NULL AND state = 'FAILED' AND error->>'code' = 'upload_idle_timeout'`); n != 1 {
		t.Fatalf("%d unkeyed jobs failed with upload_idle_timeout, want 1", n)
	}
	if n := p.count(`SELECT count(*) FROM import_job_records r JOIN import_jobs j ON j.id = r.job_id WHERE j.idempotency_key IS NULL`); n != 0 {
		t.Fatalf("the failed upload kept %d lines", n)
	}
	// The retry takes the keyed job over once its heartbeat is stale (10 s
	// after the last bytes; the heartbeat no longer beats without them).
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := p.postJob(p.token, uploadQuery, strings.NewReader(p.jobAccountLine("EXT-B")+"\n"), false, "Idempotency-Key", "resume-me")
		if r.Status == http.StatusAccepted {
			break
		}
		if r.Status != http.StatusConflict || time.Now().After(deadline) {
			t.Fatalf("retry of the stalled keyed upload: %d %s", r.Status, r.Body)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestUploadConcurrencyBounds: MAX_UPLOADS_PER_ORG across replicas (Redis
// leased slots) and MAX_UPLOADS_PER_REPLICA answer 429 with Retry-After in
// the envelope, create no job, and free their slots when uploads end.
func TestUploadConcurrencyBounds(t *testing.T) {
	p := newPipeline(t, func(c *testutil.StackConfig) {
		c.MaxUploadsPerOrg, c.MaxUploadsPerReplica = 2, 3
		c.UploadIdleTimeout = time.Minute
	})
	other := p.Tenant("Other Partner", "DEMO_ENERGY")
	a1 := p.stallUpload(t, "{")
	a2 := p.stallUpload(t, "{")
	for p.count(`SELECT count(*) FROM import_jobs WHERE state = 'RECEIVING'`) < 2 {
		time.Sleep(10 * time.Millisecond)
	}
	jobsBefore := p.count(`SELECT count(*) FROM import_jobs`)
	busy := func(r testutil.Response, why string) {
		t.Helper()
		if r.Status != http.StatusTooManyRequests || r.JSON()["code"] != "too_many_uploads" {
			t.Fatalf("%s: %d %s, want 429 too_many_uploads", why, r.Status, r.Body)
		}
		if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 {
			t.Fatalf("%s: Retry-After %q", why, r.Header.Get("Retry-After"))
		}
	}
	busy(p.postJob(p.token, uploadQuery, strings.NewReader(p.jobAccountLine("EXT-1")+"\n"), false), "third upload of one organisation")
	// Another organisation has its own slots, up to the replica's bound.
	otherPipeline := &pipeline{Stack: p.Stack, token: other.Token}
	o := otherPipeline.stallUpload(t, "{")
	for p.count(`SELECT count(*) FROM import_jobs WHERE state = 'RECEIVING'`) < 3 {
		time.Sleep(10 * time.Millisecond)
	}
	busy(otherPipeline.postJob(other.Token, uploadQuery, strings.NewReader(p.jobAccountLine("EXT-2")+"\n"), false), "upload beyond the replica's bound")
	if n := p.count(`SELECT count(*) FROM import_jobs`); n != jobsBefore+1 {
		t.Fatalf("refused uploads created jobs: %d, want %d", n, jobsBefore+1)
	}
	// Uploads that end give their slots back.
	for _, u := range []*stalledUpload{a1, a2, o} {
		_ = u.conn.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := p.postJob(p.token, uploadQuery, strings.NewReader(p.jobAccountLine("EXT-3")+"\n"), false)
		if r.Status == http.StatusAccepted {
			break
		}
		if r.Status != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("upload after the others ended: %d %s", r.Status, r.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gz compresses b.
func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// jobTablesBytes is the on-disk size of the job tables, indexes and TOAST
// included.
func (p *pipeline) jobTablesBytes() int64 {
	p.TB.Helper()
	return p.count(`SELECT pg_total_relation_size('import_jobs') + pg_total_relation_size('import_job_records') + pg_total_relation_size('import_job_errors')`)
}

// TestHostileUploadsAreBounded is the class rule for amplification at
// per-job storage: every hostile body of the table is refused or stopped
// with its code, and what it leaves in the job tables is bounded by
// JOB_INVALID_CHECK_AFTER lines and one error row per distinct error. The
// bytes stored per byte sent are logged (results/hardening.md).
func TestHostileUploadsAreBounded(t *testing.T) {
	const checkAfter = 1000
	p := newPipeline(t, func(c *testutil.StackConfig) {
		c.MaxJobLines = 300_000
		c.JobInvalidCheckAfter = checkAfter
	})
	ones := bytes.Repeat([]byte("1\n"), 200_000)
	var distinct bytes.Buffer // every line's error names its own unknown field
	for i := range 200_000 {
		fmt.Fprintf(&distinct, "{\"f%d\":1}\n", i)
	}
	var half bytes.Buffer // just under half the lines invalid: the job is received
	for i := range 2000 {
		if i%2 == 1 {
			half.WriteString("1\n")
		} else {
			half.WriteString(p.jobAccountLine(fmt.Sprintf("HALF-%d", i)) + "\n")
		}
	}
	var valid bytes.Buffer // the one valid account, repeated: gzip's best case
	for range 5000 {
		valid.WriteString(p.jobAccountLine("SAME-1") + "\n")
	}
	cases := []struct {
		name       string
		body       []byte
		gzip       bool
		status     int
		code       string
		maxRecords int64
	}{
		{"200,000 lines of 1, gzipped", gz(t, ones), true, http.StatusBadRequest, "job_mostly_invalid", checkAfter},
		{"200,000 lines of 1", ones, false, http.StatusBadRequest, "job_mostly_invalid", checkAfter},
		{"200,000 distinct errors, gzipped", gz(t, distinct.Bytes()), true, http.StatusBadRequest, "job_mostly_invalid", checkAfter},
		{"blank lines inflating 1000x", gz(t, bytes.Repeat(append(bytes.Repeat([]byte(" "), 65535), '\n'), 128)), true, http.StatusRequestEntityTooLarge, "compression_ratio_exceeded", 0},
		{"more lines than MAX_JOB_LINES", bytes.Repeat([]byte("\n"), 300_001), false, http.StatusRequestEntityTooLarge, "too_many_lines", 0},
		{"half the lines invalid", gz(t, half.Bytes()), true, http.StatusAccepted, "", 2000},
		{"one valid line repeated, gzipped", gz(t, valid.Bytes()), true, http.StatusAccepted, "", 5000},
	}
	for _, c := range cases {
		sizeBefore := p.jobTablesBytes()
		recBefore := p.count(`SELECT count(*) FROM import_job_records`)
		errBefore := p.count(`SELECT count(*) FROM import_job_errors`)
		r := p.postJob(p.token, uploadQuery, bytes.NewReader(c.body), false, gzHeader(c.gzip)...)
		if r.Status != c.status || (c.code != "" && r.JSON()["code"] != c.code) {
			t.Fatalf("%s: %d %s, want %d %s", c.name, r.Status, r.Body, c.status, c.code)
		}
		records := p.count(`SELECT count(*) FROM import_job_records`) - recBefore
		errRows := p.count(`SELECT count(*) FROM import_job_errors`) - errBefore
		if records > c.maxRecords || errRows > max(c.maxRecords, 1) {
			t.Errorf("%s: %d lines and %d error rows stored, want at most %d", c.name, records, errRows, c.maxRecords)
		}
		grown := p.jobTablesBytes() - sizeBefore
		t.Logf("%s: %d bytes sent → %d lines, %d error rows, job tables +%d bytes (%.1f bytes stored per byte sent)",
			c.name, len(c.body), records, errRows, grown, float64(grown)/float64(len(c.body)))
	}
}

func gzHeader(on bool) []string {
	if on {
		return []string{"Content-Encoding", "gzip"}
	}
	return nil
}

// TestMostlyInvalidJobKeepsItsReport: the stopped job is FAILED with
// job_mostly_invalid; its results list every line received with the error
// it had, identical errors stored once (import_job_errors) and joined back
// line by line.
func TestMostlyInvalidJobKeepsItsReport(t *testing.T) {
	p := newPipeline(t, func(c *testutil.StackConfig) { c.JobInvalidCheckAfter = 100 })
	var body strings.Builder
	for i := range 1000 {
		switch {
		case i%10 == 0:
			body.WriteString(p.jobAccountLine(fmt.Sprintf("OK-%d", i)))
		case i%2 == 0:
			body.WriteString(p.invalidJobLine(fmt.Sprintf("BAD-%d", i)))
		default:
			body.WriteString("1")
		}
		body.WriteString("\n")
	}
	r := p.postJob(p.token, uploadQuery, strings.NewReader(body.String()), true)
	if r.Status != http.StatusBadRequest || r.JSON()["code"] != "job_mostly_invalid" {
		t.Fatalf("mostly invalid upload: %d %s", r.Status, r.Body)
	}
	var id int64
	if err := p.DB.Gorm().Raw(`SELECT id FROM import_jobs ORDER BY id DESC LIMIT 1`).Scan(&id).Error; err != nil {
		t.Fatal(err)
	}
	v := p.job(p.token, id)
	if v.State != "FAILED" {
		t.Fatalf("job %s", v.State)
	}
	// Stopped at the first check: 100 lines, 10 valid (cancelled), 90 invalid.
	checkCounters(t, v, map[string]int64{"received": 100, "invalid": 90, "cancelled": 10})
	all := p.jobResults(p.token, id, "all")
	if len(all) != 100 {
		t.Fatalf("%d result lines, want 100", len(all))
	}
	// Line 2 is "1": every such line answers exactly what line 2 does.
	first := all[1]
	if first.Code == "" || len(first.Errors) == 0 {
		t.Fatalf("line 2: %+v", first)
	}
	for _, l := range all {
		i := l.Line - 1
		switch {
		case i%10 == 0:
			if l.Outcome != "cancelled" || l.Code != "" {
				t.Fatalf("line %d: %+v", l.Line, l)
			}
		case i%2 == 1:
			if l.Outcome != "invalid" || l.Code != first.Code || fmt.Sprint(l.Errors) != fmt.Sprint(first.Errors) {
				t.Fatalf("line %d: %+v, want the errors of line 2", l.Line, l)
			}
		default:
			if l.Outcome != "invalid" || l.Code != "account_failed_validation" || len(l.Errors) != 1 || l.Errors[0].Attr != "sales_channel" ||
				l.ExternalAccountNumber != fmt.Sprintf("BAD-%d", i) {
				t.Fatalf("line %d: %+v", l.Line, l)
			}
		}
	}
	if n := p.count(`SELECT count(*) FROM import_job_errors WHERE job_id = $1`, id); n != 2 {
		t.Fatalf("%d distinct errors stored, want 2", n)
	}
	if n := p.count(`SELECT sum(n) FROM import_job_errors WHERE job_id = $1`, id); n != 90 {
		t.Fatalf("error rows count %d lines, want 90", n)
	}
	if n := p.count(`SELECT count(*) FROM import_job_records WHERE job_id = $1 AND errors IS NOT NULL`, id); n != 0 {
		t.Fatalf("%d lines carry their own error JSON", n)
	}
}

// TestUploadSpeedReport times the happy path: a 20,000-account gzipped body
// to its 202 (log only; set UPLOAD_SPEED=1, results/hardening.md).
func TestUploadSpeedReport(t *testing.T) {
	if os.Getenv("UPLOAD_SPEED") == "" {
		t.Skip("set UPLOAD_SPEED=1 to time the happy path")
	}
	p := newPipeline(t)
	var body bytes.Buffer
	for i := range 20_000 {
		body.WriteString(p.jobAccountLine(fmt.Sprintf("SPD-%06d", i)) + "\n")
	}
	raw := body.Bytes()
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	for run := range 3 {
		start := time.Now()
		r := p.As(p.token, http.MethodPost, "/v1/data-import/jobs/?import_supplier=DEMO_ENERGY&operations_team_name=Migrations", zb.Bytes(),
			"Content-Type", "application/x-ndjson", "Content-Encoding", "gzip")
		if r.Status != http.StatusAccepted {
			t.Fatalf("upload: %d %s", r.Status, r.Body)
		}
		d := time.Since(start)
		t.Logf("SPEED run %d: 20,000 accounts (%d bytes, %d gzipped) accepted in %v (%.0f lines/s)", run, len(raw), zb.Len(), d, 20000/d.Seconds())
	}
}
