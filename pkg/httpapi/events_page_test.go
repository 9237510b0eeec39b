package httpapi_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

var nextLinkRe = regexp.MustCompile(`^<([^>]+)>; rel="next"$`)

// TestEventsV2Paged: the v2 timeline comes a page at a time; following
// the Link header from page to page gives exactly the whole timeline, in
// order, for an identifier that needs escaping too; a bad page_size or
// cursor is a 400 naming it.
func TestEventsV2Paged(t *testing.T) {
	st := testutil.NewStack(t)
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Timeline Partner", "DEMO_ENERGY")
	const ext = "ACC/7?#"
	for i := range 5 {
		body := strings.Replace(accountB(t, strings.ReplaceAll(ext, `"`, `\"`)), "Customer asked to be contacted by e-mail only.", "Version "+itoa(i), 1)
		if r := st.As(ten.Token, http.MethodPost, stagePath, body); r.Status != http.StatusCreated && r.Status != http.StatusOK {
			t.Fatalf("stage %d: %d %s", i, r.Status, r.Body)
		}
	}
	base := "/v2/data-import/accounts/DEMO_ENERGY/ACC%2F7%3F%23/events/"
	whole := st.As(ten.Token, http.MethodGet, base, nil)
	if whole.Status != http.StatusOK || whole.Header.Get("Link") != "" {
		t.Fatalf("whole timeline: %d Link %q %s", whole.Status, whole.Header.Get("Link"), whole.Body)
	}
	var all []map[string]any
	whole.Decode(&all)
	if len(all) < 5 {
		t.Fatalf("%d events, want at least 5: %s", len(all), whole.Body)
	}
	var paged []map[string]any
	next, pages := base+"?page_size=2", 0
	for next != "" {
		r := st.As(ten.Token, http.MethodGet, next, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", next, r.Status, r.Body)
		}
		var page []map[string]any
		r.Decode(&page)
		if len(page) > 2 || len(page) == 0 {
			t.Fatalf("GET %s: %d events", next, len(page))
		}
		paged, pages, next = append(paged, page...), pages+1, ""
		if l := r.Header.Get("Link"); l != "" {
			m := nextLinkRe.FindStringSubmatch(l)
			if m == nil || !strings.HasPrefix(m[1], base+"?") {
				t.Fatalf("Link %q", l)
			}
			next = m[1]
		}
	}
	if len(paged) != len(all) || pages != (len(all)+1)/2 {
		t.Fatalf("paged %d events in %d pages, whole %d", len(paged), pages, len(all))
	}
	for i := range all {
		if paged[i]["event"] != all[i]["event"] || paged[i]["occurred_at"] != all[i]["occurred_at"] {
			t.Fatalf("event %d: paged %v, whole %v", i, paged[i], all[i])
		}
	}
	for _, q := range []struct{ query, attr string }{
		{"page_size=0", "page_size"}, {"page_size=501", "page_size"}, {"page_size=x", "page_size"},
		{"cursor=%21%21", "cursor"}, {"cursor=LTE", "cursor"}, // "-1"
	} {
		r := st.As(ten.Token, http.MethodGet, base+"?"+q.query, nil)
		assertEnvelope(t, r, http.StatusBadRequest, "invalid_payload")
		if _, ok := fieldErrors(t, r)[q.attr]; !ok {
			t.Errorf("%s: no error at %s: %s", q.query, q.attr, r.Body)
		}
	}
}
