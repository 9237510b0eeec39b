package httpapi_test

import (
	"testing"

	"github.com/gridshift/dataimport/pkg/config"
	"github.com/gridshift/dataimport/pkg/testutil"
)

type testutilConfig = config.Config

// assertEnvelope checks status and the one error envelope's code and detail.
func assertEnvelope(t *testing.T, r testutil.Response, status int, code string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	body := r.JSON()
	if body["code"] != code {
		t.Fatalf("code %v, want %s: %s", body["code"], code, r.Body)
	}
	if d, _ := body["detail"].(string); d == "" {
		t.Fatalf("no detail: %s", r.Body)
	}
	testutil.Tally(testutil.RefusedCorrectly, 1)
}

// fieldErrors maps attr → code of a validation error body.
func fieldErrors(t *testing.T, r testutil.Response) map[string]string {
	t.Helper()
	var body struct {
		Errors []struct{ Detail, Code, Attr string }
	}
	r.Decode(&body)
	out := map[string]string{}
	for _, e := range body.Errors {
		if e.Detail == "" {
			t.Errorf("field error without detail: %+v", e)
		}
		out[e.Attr] = e.Code
	}
	return out
}

func readFixture(tb testing.TB) string {
	tb.Helper()
	b, err := testutil.ReadRepoFile("pkg/dataimport/testdata/account_valid.json")
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
