package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	sdk "github.com/gridshift/dataimport/sdk/go"
	"github.com/gridshift/dataimport/sdk/go/client"
)

const jobsPath = "/v1/data-import/jobs/"

// An upload whose first try is refused by a front the API never sees (503,
// retried; or 401 token_expired, the token renewed) is sent again whole
// from the start, under the same Idempotency-Key, for every kind of body
// the SDK takes (seekable, a plain stream it spools) and both encodings:
// the job gets every line once, and progress starts again at 0 and ends at
// the body's size on the try that counts. (A gzip body once shared its
// source between a try and the renewal's unused copy of it, which read
// ahead: the API got a corrupt body.)
func TestGoSDKUploadJobRetriesTheWholeBody(t *testing.T) {
	st, key := newStack(t)
	var mu sync.Mutex
	var keys []string
	refusal := http.StatusServiceUnavailable
	f := newFront(t, st.Server.URL, func(w http.ResponseWriter, r *http.Request, try int) bool {
		if r.Method != http.MethodPost || r.URL.Path != jobsPath {
			return false
		}
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		if try%2 == 1 { // the first try of each upload
			_, _ = io.Copy(io.Discard, r.Body)
			mu.Lock()
			status := refusal
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			if status == http.StatusUnauthorized {
				w.WriteHeader(status)
				_, _ = io.WriteString(w, `{"detail":"The access token has expired; obtain a new one.","code":"token_expired"}`)
				return true
			}
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"detail":"Try again.","code":"service_unavailable"}`)
			return true
		}
		return false
	})
	c, err := sdk.New(f.URL, key, sdk.Options{RetryWaitMin: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type bodyCase struct {
		name   string
		body   func([]byte) io.Reader
		gzip   bool
		status int
	}
	var cases []bodyCase
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusUnauthorized} {
		for _, gz := range []bool{false, true} {
			cases = append(cases,
				bodyCase{"seekable", func(b []byte) io.Reader { return bytes.NewReader(b) }, gz, status},
				bodyCase{"stream", func(b []byte) io.Reader { return io.MultiReader(bytes.NewReader(b)) }, gz, status})
		}
	}
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%s gzip=%t %d", tc.name, tc.gzip, tc.status), func(t *testing.T) {
			mu.Lock()
			refusal = tc.status
			mu.Unlock()
			var ndjson bytes.Buffer
			for n := range 3 {
				var a map[string]any
				if err := json.Unmarshal(sampleAccount(t), &a); err != nil {
					t.Fatal(err)
				}
				a["external_account_number"] = fmt.Sprintf("UP-%d-%d", i, n)
				b, _ := json.Marshal(a)
				ndjson.Write(append(b, '\n'))
			}
			var progress []int64
			job, err := c.UploadJob(ctx, "DEMO_ENERGY", "Migrations", tc.body(ndjson.Bytes()), sdk.JobOptions{Gzip: tc.gzip,
				OnProgress: func(sent, total int64) {
					if total != int64(ndjson.Len()) {
						t.Errorf("progress total %d, body %d", total, ndjson.Len())
					}
					progress = append(progress, sent)
				}})
			if err != nil {
				t.Fatalf("upload: %v", err)
			}
			restarts := 0
			for j := 1; j < len(progress); j++ {
				if progress[j] <= progress[j-1] {
					restarts++
				}
			}
			if restarts != 1 || progress[len(progress)-1] != int64(ndjson.Len()) {
				t.Errorf("progress %v: want one restart and the whole body (%d) at the end", progress, ndjson.Len())
			}
			mu.Lock()
			k := keys[len(keys)-2:]
			mu.Unlock()
			if k[0] == "" || k[0] != k[1] {
				t.Errorf("the tries carried keys %q", k)
			}
			done, err := c.WaitJob(ctx, job.Id, 100*time.Millisecond, nil)
			if err != nil {
				t.Fatal(err)
			}
			if done.State != client.JobStateCOMPLETED || done.Counters.Received != 3 || done.Counters.Created != 3 {
				t.Fatalf("job %+v", done)
			}
			n := 0
			for r, err := range c.JobResults(ctx, job.Id, "created") {
				if err != nil {
					t.Fatal(err)
				}
				if r.PlatformAccountNumber == nil || !platformRe.MatchString(*r.PlatformAccountNumber) {
					t.Errorf("result %+v", r)
				}
				n++
			}
			if n != 3 {
				t.Errorf("%d created results, want 3", n)
			}
		})
	}
}
