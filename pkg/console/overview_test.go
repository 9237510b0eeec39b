package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestOverviewSupplierAndTimeline is the small-scale functional version of
// BenchmarkOverview: 3,000 seeded processes over two suppliers, and the
// overview, the chart data, the supplier's error groups and an account's
// timeline must show exactly what was seeded.
func TestOverviewSupplierAndTimeline(t *testing.T) {
	st, srv := consoleStack(t)
	st.Supplier("ACME")
	st.Supplier("BOLT")
	want := seedProcesses(t, st.DB, 3000, "ACME", "BOLT")
	b := loggedIn(t, st, srv.URL, "olivia")

	live := b.do(http.MethodGet, "/overview/live", nil)
	if live.Status != http.StatusOK {
		t.Fatalf("live: %d", live.Status)
	}
	for code, w := range want {
		row := regexp.MustCompile(`(?s)<tr data-supplier="` + code + `">(.*?)</tr>`).FindStringSubmatch(live.Body)
		if row == nil {
			t.Fatalf("no row for %s in %.1000s", code, live.Body)
		}
		cells := regexp.MustCompile(`<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(row[1], -1)
		got := []string{}
		for _, c := range cells[2:9] {
			got = append(got, c[1])
		}
		exp := []string{fmt.Sprint(w.Staged), fmt.Sprint(w.Scheduled), fmt.Sprint(w.InProgress), fmt.Sprint(w.Completed),
			fmt.Sprint(w.Errored), "0", "0"}
		if strings.Join(got, " ") != strings.Join(exp, " ") {
			t.Errorf("%s: staged, scheduled, in progress, completed, errored, cancelled, dry runs = %v, want %v", code, got, exp)
		}
	}
	if !strings.Contains(live.Body, fmt.Sprintf(`<span id="in-progress">%d</span>`, want["ACME"].InProgress+want["BOLT"].InProgress)) {
		t.Errorf("in progress against the cap is not the sum of the suppliers'")
	}

	// The chart: accounts created in the last 3 hours per minute. The seed
	// creates account i at now - (i mod 1440) minutes.
	var chart struct {
		Labels   []string
		Datasets []struct {
			Label string
			Data  []int64
		}
	}
	if p := b.do(http.MethodGet, "/overview/chart.json", nil); p.Status != http.StatusOK || json.Unmarshal([]byte(p.Body), &chart) != nil {
		t.Fatalf("chart: %d %.300s", p.Status, p.Body)
	}
	var inChart, seeded int64
	for _, d := range chart.Datasets {
		for _, v := range d.Data {
			inChart += v
		}
	}
	for i := 1; i <= 3000; i++ {
		if i%10 < 6 && i%1440 < 179 { // minutes fully inside the 180-minute window
			seeded++
		}
	}
	if len(chart.Labels) != 180 || len(chart.Datasets) != 2 || inChart < seeded || inChart > seeded+int64(3000/1440+1)*6 {
		t.Errorf("chart: %d labels, %d series, %d accounts; want 180, 2, about %d", len(chart.Labels), len(chart.Datasets), inChart, seeded)
	}

	// Errors grouped by code with counts and examples.
	sp := b.do(http.MethodGet, "/suppliers/ACME", nil)
	var refused, phone int64
	for i := 1; i <= 3000; i++ {
		if i%10 == 6 && (i/10)%2 == 0 {
			if i%7 == 0 {
				refused++
			} else {
				phone++
			}
		}
	}
	for code, n := range map[string]int64{"invalid_phone_number": phone, "data_refused": refused} {
		m := regexp.MustCompile(`(?s)<tr data-code="` + code + `">.*?<td class="count">(\d+)</td><td><ul>(.*?)</ul>`).FindStringSubmatch(sp.Body)
		if m == nil || m[1] != fmt.Sprint(n) || strings.Count(m[2], "<li>") != 5 {
			t.Errorf("error group %s: %v, want count %d with 5 examples", code, m, n)
		}
	}

	// Find an account by platform number; its timeline shows the process.
	acc := b.do(http.MethodGet, "/suppliers/ACME/accounts?number="+url.QueryEscape("A-00000001"), nil)
	if acc.Status != http.StatusOK || !strings.Contains(acc.Body, "Account EXT-00000001") || !strings.Contains(acc.Body, "COMPLETED / PROCESSED") {
		t.Errorf("find by platform number: %d %.600s", acc.Status, acc.Body)
	}
	if p := b.do(http.MethodGet, "/suppliers/BOLT/accounts?number=EXT-00000001", nil); p.Status != http.StatusNotFound {
		t.Errorf("another supplier's account: %d", p.Status)
	}
	// Skip a staged-only account (kind 7), from the page, and see it skipped.
	p := b.post("/suppliers/ACME/accounts?number=EXT-00000007", "/suppliers/ACME/accounts/skip", url.Values{"external": {"EXT-00000007"}})
	if p.Status != http.StatusSeeOther {
		t.Fatalf("skip: %d %s", p.Status, p.Body)
	}
	if p := b.do(http.MethodGet, p.Location, nil); !strings.Contains(p.Body, `id="skipped"`) {
		t.Errorf("after skip the account does not show skipped: %.800s", p.Body)
	}
	if p := b.post("/suppliers/ACME/accounts?number=EXT-00000007", "/suppliers/ACME/accounts/skip", url.Values{"external": {"EXT-00000001"}}); p.Status != http.StatusConflict {
		t.Errorf("skip an imported account: %d", p.Status)
	}
	audit := b.do(http.MethodGet, "/audit", nil)
	if !strings.Contains(audit.Body, `<td class="action">account.skip</td><td class="target">account:ACME/EXT-00000007</td>`) ||
		!strings.Contains(audit.Body, `<td class="actor">operator:olivia</td>`) {
		t.Errorf("audit page lacks the skip: %.1500s", audit.Body)
	}
}

// TestOverviewWebhookHealth: the overview's webhook section shows each
// endpoint's health from its deliveries: delivered, retrying, given up,
// disabled.
func TestOverviewWebhookHealth(t *testing.T) {
	st, srv := consoleStack(t)
	st.Supplier("ACME")
	st.Tenant("Alpha", "ACME")
	st.Tenant("Beta", "ACME")
	seedProcesses(t, st.DB, 4, "ACME")
	g := st.DB.Gorm()
	secret := "whsec_" + strings.Repeat("A", 32)
	for _, q := range []string{
		`INSERT INTO import_process_events (process_id, event) SELECT id, 'EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED' FROM import_processes`,
		`INSERT INTO webhook_endpoints (id, organisation_id, url, secret) SELECT 101, id, 'https://alpha.example/ok', '` + secret + `' FROM organisations WHERE name = 'Alpha'`,
		`INSERT INTO webhook_endpoints (id, organisation_id, url, secret) SELECT 102, id, 'https://alpha.example/slow', '` + secret + `' FROM organisations WHERE name = 'Alpha'`,
		`INSERT INTO webhook_endpoints (id, organisation_id, url, secret) SELECT 103, id, 'https://beta.example/dead', '` + secret + `' FROM organisations WHERE name = 'Beta'`,
		`INSERT INTO webhook_endpoints (id, organisation_id, url, secret, enabled, disabled_reason) SELECT 104, id, 'https://beta.example/gone', '` + secret + `', false, 'receiver answered 410' FROM organisations WHERE name = 'Beta'`,
		// 101: everything delivered.
		`INSERT INTO webhook_deliveries (endpoint_id, event_id, attempts, state, delivered_at) SELECT 101, id, 1, 'delivered', now() FROM import_process_events`,
		// 102: one delivered, two waiting for a retry, one not tried yet.
		`INSERT INTO webhook_deliveries (endpoint_id, event_id, attempts, state, delivered_at)
		   SELECT 102, id, CASE WHEN rn = 1 THEN 1 WHEN rn < 4 THEN 2 ELSE 0 END, CASE WHEN rn = 1 THEN 'delivered' ELSE 'pending' END,
		          CASE WHEN rn = 1 THEN now() END
		     FROM (SELECT id, row_number() OVER (ORDER BY id) rn FROM import_process_events) e`,
		// 103: one gave up after its whole schedule, one retrying.
		`INSERT INTO webhook_deliveries (endpoint_id, event_id, attempts, state)
		   SELECT 103, id, 11, CASE WHEN rn = 1 THEN 'failed' ELSE 'pending' END
		     FROM (SELECT id, row_number() OVER (ORDER BY id) rn FROM import_process_events) e WHERE rn <= 2`,
	} {
		if err := g.Exec(q).Error; err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	b := loggedIn(t, st, srv.URL, "olivia")
	live := b.do(http.MethodGet, "/overview/live", nil)
	if live.Status != http.StatusOK {
		t.Fatalf("live: %d", live.Status)
	}
	section := regexp.MustCompile(`(?s)<section id="webhooks">(.*?)</section>`).FindStringSubmatch(live.Body)
	if section == nil {
		t.Fatalf("no webhook section in %.2000s", live.Body)
	}
	var got []string
	for _, row := range regexp.MustCompile(`(?s)<tr><td>(.*?)</tr>`).FindAllStringSubmatch(section[1], -1) {
		cells := regexp.MustCompile(`<td>(.*?)</td>`).FindAllStringSubmatch("<td>"+row[1], -1)
		var c []string
		for _, x := range cells[:4] {
			c = append(c, x[1])
		}
		c = append(c, fmt.Sprint(cells[4][1] != "—")) // "—": never delivered
		got = append(got, strings.Join(c, " | "))
	}
	want := []string{
		"Alpha | https://alpha.example/ok | healthy | 0 | true",
		"Alpha | https://alpha.example/slow | retrying | 2 | true",
		"Beta | https://beta.example/dead | failing | 2 | false",
		"Beta | https://beta.example/gone | disabled: receiver answered 410 | 0 | false",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("webhook rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
