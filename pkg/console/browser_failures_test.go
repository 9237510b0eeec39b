package console_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// failuresJob uploads a 10,000-line job to the api process at api with 2%
// bad lines across the five badKinds (create=false: the worker stages the
// rest), waits for it to complete, and checks what a partner reads: the
// failures summary counts each (code, attr) exactly and the results CSV's
// error_code and error_attr are each bad line's field code and attr. It
// returns the job id and the counts the console must show.
func failuresJob(t *testing.T, api, token, supplier string) (int64, []map[string]any) {
	t.Helper()
	body, want, byLine := failingJob(t, supplier, 10_000, 50)
	call := func(method, path string, body []byte, ct string) (int, []byte) {
		req, err := http.NewRequest(method, api+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Token "+token)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, raw
	}
	status, raw := call(http.MethodPost, "/v1/data-import/jobs/?import_supplier="+supplier+"&create=false", body, "application/x-ndjson")
	var job struct {
		ID       int64  `json:"id"`
		State    string `json:"state"`
		Counters struct {
			Invalid, Staged int64
		} `json:"counters"`
	}
	if status != http.StatusAccepted || json.Unmarshal(raw, &job) != nil {
		t.Fatalf("upload of the 10,000-line job: %d %s", status, raw)
	}
	start := time.Now()
	for job.State != "COMPLETED" {
		if time.Since(start) > 3*time.Minute {
			t.Fatalf("the job did not complete in 3 minutes: %s", raw)
		}
		time.Sleep(500 * time.Millisecond)
		if status, raw = call(http.MethodGet, fmt.Sprintf("/v1/data-import/jobs/%d/", job.ID), nil, ""); status != http.StatusOK ||
			json.Unmarshal(raw, &job) != nil {
			t.Fatalf("job status: %d %s", status, raw)
		}
	}
	t.Logf("the 10,000-line job completed in %s: %s", time.Since(start).Round(time.Millisecond), raw)
	if job.Counters.Invalid != 200 || job.Counters.Staged != 9_800 {
		t.Fatalf("counters: %s", raw)
	}

	status, raw = call(http.MethodGet, fmt.Sprintf("/v1/data-import/failures/summary/?import_supplier=%s&job=%d", supplier, job.ID), nil, "")
	var summary struct {
		Counts []struct {
			Code, Attr           string
			Unresolved, Resolved int64
		} `json:"by_code"`
	}
	if status != http.StatusOK || json.Unmarshal(raw, &summary) != nil {
		t.Fatalf("summary: %d %s", status, raw)
	}
	got := map[[2]string]int64{}
	for _, c := range summary.Counts {
		got[[2]string{c.Code, c.Attr}] = c.Unresolved
		if c.Resolved != 0 {
			t.Errorf("summary: %d resolved of %s %s", c.Resolved, c.Code, c.Attr)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(want) != 5 {
		t.Fatalf("the summary counts:\n got %v\nwant %v", got, want)
	}

	status, raw = call(http.MethodGet, fmt.Sprintf("/v1/data-import/jobs/%d/results/?format=csv&outcome=invalid", job.ID), nil, "")
	if status != http.StatusOK {
		t.Fatalf("results CSV: %d %s", status, raw)
	}
	recs, err := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(raw, []byte("\ufeff")))).ReadAll()
	if err != nil || len(recs) != 201 {
		t.Fatalf("results CSV: %d records, %v", len(recs), err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, r := range recs[1:] {
		line, _ := strconv.Atoi(r[col["line"]])
		if w, ok := byLine[line]; !ok || r[col["outcome"]] != "invalid" || r[col["error_code"]] != w[0] || r[col["error_attr"]] != w[1] {
			t.Errorf("results CSV line %d: outcome %s, error_code %q, error_attr %q; want invalid %v", line,
				r[col["outcome"]], r[col["error_code"]], r[col["error_attr"]], w)
		}
	}

	var counts []map[string]any
	for k, n := range want {
		counts = append(counts, map[string]any{"code": k[0], "attr": k[1], "n": n})
	}
	sort.Slice(counts, func(i, j int) bool { return counts[i]["code"].(string) < counts[j]["code"].(string) })
	return job.ID, counts
}

// jsonEnv is v as JSON, for the script's environment.
func jsonEnv(t *testing.T, v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(raw))
}
