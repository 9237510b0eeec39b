package app_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/testutil"
)

const feedPath = "/v1/data-import/events/"

type feedItem struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	OccurredAt string `json:"occurred_at"`
	Data       struct {
		ImportSupplier        string  `json:"import_supplier"`
		ExternalAccountNumber string  `json:"external_account_number"`
		PlatformAccountNumber *string `json:"platform_account_number"`
		Status                string  `json:"status"`
		Error                 *struct {
			Code, Detail, Domain string
		} `json:"error"`
		// A job's end (job.*-v1).
		JobID              int64            `json:"job_id"`
		State              string           `json:"state"`
		Counters           map[string]int64 `json:"counters"`
		FailuresSummaryURL string           `json:"failures_summary_url"`
		Control            []map[string]any `json:"control"`
		Reconciliation     string           `json:"reconciliation"`
	} `json:"data"`
}

type feedAnswer struct {
	Events []feedItem `json:"events"`
	Next   string     `json:"next"`
}

// readFeed is one GET of the feed; query is the raw query string.
func readFeed(tb testing.TB, st *testutil.Stack, token, query string) feedAnswer {
	tb.Helper()
	r := st.As(token, http.MethodGet, feedPath+"?"+query, nil)
	if r.Status != http.StatusOK {
		tb.Fatalf("feed ?%s: %d %s", query, r.Status, r.Body)
	}
	var a feedAnswer
	r.Decode(&a)
	if a.Events == nil {
		tb.Fatalf("feed ?%s: events is not an array: %s", query, r.Body)
	}
	return a
}

// followFeed reads pages of at most limit from after until it has want
// events (failing after within), then checks the feed has nothing more.
func followFeed(tb testing.TB, st *testutil.Stack, token, after string, limit, want int, within time.Duration, extra string) ([]feedItem, string) {
	tb.Helper()
	if after == "" {
		after = dataimport.FeedCursor(0) // what the feed answers for its start
	}
	var got []feedItem
	deadline := time.Now().Add(within)
	for len(got) < want {
		if time.Now().After(deadline) {
			tb.Fatalf("feed gave %d of %d events within %s", len(got), want, within)
		}
		q := url.Values{"after": {after}, "limit": {fmt.Sprint(limit)}, "wait": {"1s"}}
		a := readFeed(tb, st, token, q.Encode()+extra)
		if len(a.Events) > limit {
			tb.Fatalf("page of %d events with limit=%d", len(a.Events), limit)
		}
		if len(a.Events) == 0 && a.Next != after {
			tb.Fatalf("empty page moved the cursor from %q to %q", after, a.Next)
		}
		got = append(got, a.Events...)
		after = a.Next
	}
	if a := readFeed(tb, st, token, "after="+after+extra); len(a.Events) != 0 || a.Next != after {
		tb.Fatalf("after the %d expected events the feed has %d more (next %q, sent %q)", want, len(a.Events), a.Next, after)
	}
	return got, after
}

// positionOrder is the event ids (evt_…) of the published events of the
// given suppliers, in position order, straight from the event log.
func positionOrder(tb testing.TB, st *testutil.Stack, suppliers ...string) []string {
	tb.Helper()
	var ids []int64
	err := st.DB.Gorm().Raw(`SELECT e.id FROM import_process_events e
		JOIN import_processes p ON p.id = e.process_id JOIN import_suppliers s ON s.id = p.supplier_id
		WHERE s.code IN ? AND e.event IN ? AND e.position IS NOT NULL ORDER BY e.position`,
		suppliers, dataimport.PublishedEvents()).Scan(&ids).Error
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = dataimport.FeedEventID(id)
	}
	return out
}

func itemIDs(items []feedItem) []string {
	out := make([]string, len(items))
	for i, e := range items {
		out[i] = e.ID
	}
	return out
}

// exactlyOnceInOrder checks that the feed gave each event once and in the
// log's position order.
func exactlyOnceInOrder(t *testing.T, got []feedItem, want []string) {
	t.Helper()
	ids := itemIDs(got)
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("event %s read %d times", id, n)
		}
	}
	for _, id := range want {
		if seen[id] == 0 {
			t.Errorf("event %s never read", id)
		}
	}
	if !slices.Equal(ids, want) && !t.Failed() {
		t.Errorf("events out of position order")
	}
}

func processID(tb testing.TB, st *testutil.Stack, external string) int64 {
	tb.Helper()
	var id int64
	if err := st.DB.Gorm().Raw(`SELECT id FROM import_processes WHERE external_account_number = ?`, external).Scan(&id).Error; err != nil || id == 0 {
		tb.Fatalf("process %s: %d %v", external, id, err)
	}
	return id
}

func sqlDB(tb testing.TB, st *testutil.Stack) *sql.DB {
	tb.Helper()
	db, err := st.DB.Gorm().DB()
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

const insertEventSQL = `INSERT INTO import_process_events (process_id, event, data) VALUES ($1, $2, $3::jsonb)`

// 1,000 events, part from real creations by a worker process and the rest
// written directly by overlapping transactions while a reader pages through
// the feed with limit=100: every event is read exactly once, in position
// order, and nothing unpublished shows.
func TestFeedPagesEveryEventOnceInOrder(t *testing.T) {
	p := newPipeline(t)
	const real, total = 20, 1000
	ids := p.stageMany(0, real)
	p.StartProcess("worker", "WORKER_CONCURRENCY=4")
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			if r := p.create(id, nil); r.Status != http.StatusCreated {
				t.Errorf("create %s: %d %s", id, r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Bulk: processes of their own, and events by 8 writers in transactions
	// of 1–5 events held open for a random moment, so that they overlap and
	// commit out of id order; a third of the rows are unpublished.
	db := sqlDB(t, p.Stack)
	ctx := context.Background()
	var procs []int64
	rows, err := db.QueryContext(ctx, `INSERT INTO import_processes (supplier_id, external_account_number, staged_version)
		SELECT s.id, 'BULK-' || g, 1 FROM import_suppliers s, generate_series(1, 50) g WHERE s.code = 'DEMO_ENERGY' RETURNING id`)
	must(t, err)
	for rows.Next() {
		var id int64
		must(t, rows.Scan(&id))
		procs = append(procs, id)
	}
	must(t, rows.Err())
	published := []struct{ event, data string }{
		{dataimport.EventErrored, `{"attempt": 1, "error": {"code": "account_failed_validation", "detail": "The account is invalid.", "domain": "validation",
			"errors": [{"attr": "customers.0.landline", "code": "invalid_phone_number", "detail": "Enter a valid phone number."}]}}`},
		{dataimport.EventDryRunSucceeded, `{"attempt": 1}`},
		{dataimport.EventCancelled, `{"attempt": 2}`},
	}
	jobs := make(chan int)
	writers := sync.WaitGroup{}
	for range 8 {
		writers.Go(func() {
			for n := range jobs {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Error(err)
					return
				}
				for i := range n {
					ev := published[rand.IntN(len(published))]
					if _, err := tx.ExecContext(ctx, insertEventSQL, procs[rand.IntN(len(procs))], ev.event, ev.data); err != nil {
						t.Error(err)
					}
					if i == 0 {
						_, err = tx.ExecContext(ctx, insertEventSQL, procs[rand.IntN(len(procs))], dataimport.EventStarted, `{}`)
						if err != nil {
							t.Error(err)
						}
					}
					time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
				}
				if err := tx.Commit(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	go func() {
		defer close(jobs)
		for left := total - real; left > 0; {
			n := min(1+rand.IntN(5), left)
			jobs <- n
			left -= n
		}
	}()

	// The reader pages while the writers write.
	got, _ := followFeed(t, p.Stack, p.token, "", 100, total, 90*time.Second, "")
	writers.Wait()
	if len(got) != total {
		t.Fatalf("%d events read, want %d", len(got), total)
	}
	exactlyOnceInOrder(t, got, positionOrder(t, p.Stack, "DEMO_ENERGY"))

	// The real creations read as the contract says.
	complete := 0
	for _, e := range got {
		if _, ok := dataimport.PublishedEvent(e.Type); !ok {
			t.Fatalf("unpublished type %q in the feed", e.Type)
		}
		if e.Type != "import_process.complete-v1" {
			continue
		}
		complete++
		var number string
		must(t, p.DB.Gorm().Raw(`SELECT platform_account_number FROM accounts WHERE external_account_number = ?`, e.Data.ExternalAccountNumber).Scan(&number).Error)
		if e.Data.Status != "PROCESSED" || e.Data.PlatformAccountNumber == nil || *e.Data.PlatformAccountNumber != number ||
			e.Data.ImportSupplier != "DEMO_ENERGY" || e.Data.Error != nil || !strings.HasPrefix(e.ID, "evt_") {
			t.Errorf("complete event %+v (account %s)", e, number)
		}
	}
	if complete != real {
		t.Errorf("%d complete events, want %d", complete, real)
	}
	// Reading again from the start gives the same events, same ids.
	again, _ := followFeed(t, p.Stack, p.token, "", 1000, total, 30*time.Second, "")
	if !slices.Equal(itemIDs(again), itemIDs(got)) {
		t.Error("a replay from the start differs")
	}
}

// Two transactions commit out of id order: the one that wrote the smaller
// id commits last. A reader that read the feed between the two commits
// still gets both events, once each.
func TestFeedNeverSkipsALateCommit(t *testing.T) {
	p := newPipeline(t)
	p.stage("EXT-SLOW")
	p.stage("EXT-FAST")
	slowProc, fastProc := processID(t, p.Stack, "EXT-SLOW"), processID(t, p.Stack, "EXT-FAST")
	cursor := readFeed(t, p.Stack, p.token, "after=latest").Next
	db := sqlDB(t, p.Stack)
	ctx := context.Background()
	errData := `{"attempt": 1, "error": {"code": "server_error", "detail": "Boom.", "domain": "processing"}}`

	slow, err := db.BeginTx(ctx, nil)
	must(t, err)
	t.Cleanup(func() { _ = slow.Rollback() })
	var slowID, fastID int64
	must(t, slow.QueryRowContext(ctx, insertEventSQL+` RETURNING id`, slowProc, dataimport.EventErrored, errData).Scan(&slowID))
	fast, err := db.BeginTx(ctx, nil)
	must(t, err)
	must(t, fast.QueryRowContext(ctx, insertEventSQL+` RETURNING id`, fastProc, dataimport.EventErrored, errData).Scan(&fastID))
	must(t, fast.Commit())
	if fastID <= slowID {
		t.Fatalf("ids %d, %d: the slow transaction's must be smaller", slowID, fastID)
	}

	// Read between the two commits, giving the relay time to number
	// whatever it would.
	var got []feedItem
	for range 2 {
		a := readFeed(t, p.Stack, p.token, "after="+cursor+"&wait=1s")
		got, cursor = append(got, a.Events...), a.Next
	}
	must(t, slow.Commit())
	rest, _ := followFeed(t, p.Stack, p.token, cursor, 100, 2-len(got), 30*time.Second, "")
	got = append(got, rest...)
	exactlyOnceInOrder(t, got, []string{dataimport.FeedEventID(slowID), dataimport.FeedEventID(fastID)})
	if !slices.Equal(itemIDs(got), positionOrder(t, p.Stack, "DEMO_ENERGY")) {
		t.Errorf("feed order %v differs from the log's positions", itemIDs(got))
	}
}

// A dry run publishes its dry-run event and nothing else; work that rolled
// back publishes nothing: not a creation transaction rolled back, not the
// account of a creation the database refused (its error is published).
func TestFeedDryRunAndRolledBackCreation(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	start := readFeed(t, p.Stack, p.token, "after=latest").Next

	p.stage("EXT-DRY")
	if r := p.create("EXT-DRY", map[string]any{"dry_run": true}); r.Status != http.StatusBadRequest || r.JSON()["code"] != "dry_run_rolled_back" {
		t.Fatalf("dry run: %d %s", r.Status, r.Body)
	}

	// A creation transaction that wrote its complete event, then rolled back.
	p.stage("EXT-ROLLED")
	db := sqlDB(t, p.Stack)
	tx, err := db.BeginTx(context.Background(), nil)
	must(t, err)
	_, err = tx.Exec(insertEventSQL, processID(t, p.Stack, "EXT-ROLLED"), dataimport.EventProcessed, `{"attempt": 1, "platform_account_number": "A-00000001"}`)
	must(t, err)
	must(t, tx.Rollback())

	// A creation the database refuses: the worker's transaction rolls back.
	must(t, p.DB.Gorm().Exec(`ALTER TABLE account_customers ADD CONSTRAINT test_no_alice CHECK (given_name <> 'Alice') NOT VALID`).Error)
	r := p.create("EXT-ROLLED", nil)
	must(t, p.DB.Gorm().Exec(`ALTER TABLE account_customers DROP CONSTRAINT test_no_alice`).Error)
	if r.Status != http.StatusBadRequest || r.JSON()["code"] != "data_refused" {
		t.Fatalf("refused create: %d %s", r.Status, r.Body)
	}

	got, _ := followFeed(t, p.Stack, p.token, start, 100, 2, 30*time.Second, "")
	byAccount := map[string][]feedItem{}
	for _, e := range got {
		byAccount[e.Data.ExternalAccountNumber] = append(byAccount[e.Data.ExternalAccountNumber], e)
		if e.Type == "import_process.complete-v1" {
			t.Errorf("a complete event for work that rolled back: %+v", e)
		}
	}
	if d := byAccount["EXT-DRY"]; len(d) != 1 || d[0].Type != "import_process.dry_run_complete-v1" || d[0].Data.Status != "DRY_RUN_SUCCEEDED" ||
		d[0].Data.PlatformAccountNumber != nil || d[0].Data.Error != nil {
		t.Errorf("dry run's events: %+v", d)
	}
	if e := byAccount["EXT-ROLLED"]; len(e) != 1 || e[0].Type != "import_process.error-v1" || e[0].Data.Status != "ERRORED" ||
		e[0].Data.PlatformAccountNumber != nil || e[0].Data.Error == nil || e[0].Data.Error.Code != "data_refused" || e[0].Data.Error.Detail == "" {
		t.Errorf("refused creation's events: %+v", e)
	}
	// Filters: by type, and by supplier.
	if a := readFeed(t, p.Stack, p.token, "after="+start+"&type=import_process.complete-v1&type=import_process.error-v1"); len(a.Events) != 1 ||
		a.Events[0].Data.ExternalAccountNumber != "EXT-ROLLED" {
		t.Errorf("type filter: %+v", a.Events)
	}
	if a := readFeed(t, p.Stack, p.token, "after="+start+"&import_supplier=DEMO_ENERGY&limit=1"); len(a.Events) != 1 || a.Events[0].ID != got[0].ID {
		t.Errorf("supplier filter with limit=1: %+v", a.Events)
	}
}

// Organisation B never reads A's events, neither in its feed nor by naming
// A's supplier (answered as an unknown supplier), nor by long-polling while
// A works.
func TestFeedTenancy(t *testing.T) {
	st := testutil.NewStack(t, testutil.FastPipeline)
	st.Supplier("ALPHA")
	st.Supplier("DEMO_ENERGY")
	alphaT := st.Tenant("Alpha Org", "ALPHA")
	bravoT := st.Tenant("Bravo Org", "DEMO_ENERGY")
	both := st.Tenant("Both Org", "ALPHA", "DEMO_ENERGY")
	must(t, firstErr(st.DB.CreateTeam(context.Background(), "Migrations")))
	st.StartWorker()
	bravo := &pipeline{Stack: st, token: bravoT.Token}
	alphaAccount := func(ext string) string { return strings.Replace(bravo.account(ext), `"DEMO_ENERGY"`, `"ALPHA"`, 1) }
	for i := range 3 {
		ext := fmt.Sprintf("A-%d", i)
		if r := st.As(alphaT.Token, http.MethodPost, stagePath, alphaAccount(ext)); r.Status != http.StatusCreated {
			t.Fatalf("stage %s: %d %s", ext, r.Status, r.Body)
		}
		if r := st.As(alphaT.Token, http.MethodPost, createPath, map[string]any{"external_account_number": ext,
			"import_supplier_code": "ALPHA", "operations_team_name": "Migrations"}); r.Status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", ext, r.Status, r.Body)
		}
	}
	for i := range 2 {
		ext := fmt.Sprintf("B-%d", i)
		bravo.stage(ext)
		if r := bravo.create(ext, nil); r.Status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", ext, r.Status, r.Body)
		}
	}
	check := func(name string, got []feedItem, suppliers ...string) {
		t.Helper()
		for _, e := range got {
			if !slices.Contains(suppliers, e.Data.ImportSupplier) {
				t.Errorf("%s read an event of %s: %+v", name, e.Data.ImportSupplier, e)
			}
		}
		exactlyOnceInOrder(t, got, positionOrder(t, st, suppliers...))
	}
	a, _ := followFeed(t, st, alphaT.Token, "", 100, 3, 30*time.Second, "")
	check("A", a, "ALPHA")
	b, bNext := followFeed(t, st, bravoT.Token, "", 100, 2, 30*time.Second, "")
	check("B", b, "DEMO_ENERGY")
	ab, _ := followFeed(t, st, both.Token, "", 100, 5, 30*time.Second, "")
	check("an organisation granted both", ab, "ALPHA", "DEMO_ENERGY")

	// Naming A's supplier is naming an unknown one.
	foreign := st.As(bravoT.Token, http.MethodGet, feedPath+"?import_supplier=ALPHA", nil)
	unknown := st.As(bravoT.Token, http.MethodGet, feedPath+"?import_supplier=NOPE", nil)
	if foreign.Status != http.StatusNotFound || foreign.JSON()["code"] != "not_found" ||
		strings.ReplaceAll(string(foreign.Body), "ALPHA", "NOPE") != string(unknown.Body) {
		t.Errorf("B naming A's supplier: %d %s; unknown supplier: %d %s", foreign.Status, foreign.Body, unknown.Status, unknown.Body)
	}

	// B long-polls while A creates another account: B's poll ends empty.
	done := make(chan feedAnswer, 1)
	go func() { done <- readFeed(t, st, bravoT.Token, "after="+bNext+"&wait=3s") }()
	if r := st.As(alphaT.Token, http.MethodPost, stagePath, alphaAccount("A-9")); r.Status != http.StatusCreated {
		t.Fatalf("stage A-9: %d %s", r.Status, r.Body)
	}
	if got := <-done; len(got.Events) != 0 || got.Next != bNext {
		t.Errorf("B's long-poll during A's work: %+v", got)
	}
}

// A long-poll answers as soon as an event the caller may see is numbered,
// not when its wait ends; every waiting poll of a process shares one LISTEN
// connection.
func TestFeedLongPollWakesOnEvent(t *testing.T) {
	p := newPipeline(t)
	p.stage("EXT-LP")
	for deadline := time.Now().Add(10 * time.Second); !p.DB.FeedListening(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the API does not listen for feed notifications")
		}
	}
	tail := readFeed(t, p.Stack, p.token, "after=latest").Next
	const polls, wait = 20, 30 * time.Second
	type answer struct {
		a  feedAnswer
		at time.Time
	}
	answers := make(chan answer, polls)
	for range polls {
		go func() {
			a := readFeed(t, p.Stack, p.token, "after="+tail+"&wait="+wait.String())
			answers <- answer{a, time.Now()}
		}()
	}
	// The polls wait: none has answered, and they share one LISTEN.
	time.Sleep(500 * time.Millisecond)
	if n := len(answers); n != 0 {
		t.Fatalf("%d long-polls answered before any event", n)
	}
	if n := p.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN dataimport_feed'`); n != 1 {
		t.Errorf("%d LISTEN connections for %d waiting polls, want 1", n, polls)
	}

	var id int64
	must(t, sqlDB(t, p.Stack).QueryRow(insertEventSQL+` RETURNING id`, processID(t, p.Stack, "EXT-LP"), dataimport.EventCancelled, `{"attempt": 1}`).Scan(&id))
	inserted := time.Now()
	var slowest time.Duration
	for range polls {
		select {
		case got := <-answers:
			if len(got.a.Events) != 1 || got.a.Events[0].ID != dataimport.FeedEventID(id) || got.a.Events[0].Type != "import_process.cancelled-v1" {
				t.Fatalf("long-poll answered %+v", got.a)
			}
			slowest = max(slowest, got.at.Sub(inserted))
		case <-time.After(wait - 5*time.Second):
			t.Fatalf("long-polls still waiting %s after the event was committed (wait=%s)", time.Since(inserted), wait)
		}
	}
	t.Logf("every long-poll answered within %s of the commit", slowest)
}

// SIGTERM does not wait for long-polls: they answer at once (nothing new)
// and the API exits cleanly, well before their wait or the drain timeout.
func TestFeedLongPollEndsOnShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the api binary")
	}
	p := newPipeline(t)
	addr := testutil.FreeAddr(t)
	api := p.StartProcess("api", "HTTP_ADDR="+addr, "SHUTDOWN_TIMEOUT=25s")
	base := "http://" + addr
	waitHTTP(t, base+"/readyz")
	cursor := dataimport.FeedCursor(0)
	type answer struct {
		status int
		body   string
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, base+feedPath+"?after="+cursor+"&wait=30s", nil)
		req.Header.Set("Authorization", "Token "+p.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		answered <- answer{resp.StatusCode, string(b), err}
	}()
	time.Sleep(500 * time.Millisecond) // the poll is waiting
	if len(answered) != 0 {
		t.Fatalf("the long-poll answered before any event: %+v", <-answered)
	}
	must(t, api.Cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- api.Cmd.Wait() }()
	select {
	case a := <-answered:
		if a.err != nil || a.status != http.StatusOK || a.body != `{"events":[],"next":"`+cursor+`"}` {
			t.Fatalf("long-poll at shutdown: %d %q %v", a.status, a.body, a.err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the long-poll held the shutdown")
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("api exit: %v\n%s", err, api.Logs.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the api did not exit")
	}
}

// Bad queries get a 400 naming every bad parameter at once; nothing else
// is read.
func TestFeedBadQueries(t *testing.T) {
	p := newPipeline(t)
	valid := readFeed(t, p.Stack, p.token, "").Next
	if _, ok := dataimport.ParseFeedCursor(valid); !ok {
		t.Fatalf("next %q is not a cursor", valid)
	}
	for _, tc := range []struct {
		query string
		attrs map[string]string
	}{
		{"after=garbage", map[string]string{"after": "invalid"}},
		{"after=" + valid + "x", map[string]string{"after": "invalid"}},
		{"after=-1", map[string]string{"after": "invalid"}},
		{"after=" + valid + "&after=" + valid, map[string]string{"after": "invalid"}},
		{"limit=0", map[string]string{"limit": "invalid"}},
		{"limit=1001", map[string]string{"limit": "invalid"}},
		{"limit=%2B5", map[string]string{"limit": "invalid"}},
		{"limit=ten", map[string]string{"limit": "invalid"}},
		{"type=import_process.staged-v1", map[string]string{"type": "invalid_choice"}},
		{"type=import_process.complete-v1&type=bogus", map[string]string{"type": "invalid_choice"}},
		{"wait=31s", map[string]string{"wait": "invalid"}},
		{"wait=-1s", map[string]string{"wait": "invalid"}},
		{"wait=20", map[string]string{"wait": "invalid"}},
		{"import_supplier=", map[string]string{"import_supplier": "blank"}},
		{"cursor=" + valid, map[string]string{"cursor": "unknown_field"}},
		{"after=x&limit=0&wait=1h&type=x&colour=red", map[string]string{"after": "invalid", "limit": "invalid", "wait": "invalid",
			"type": "invalid_choice", "colour": "unknown_field"}},
	} {
		r := p.As(p.token, http.MethodGet, feedPath+"?"+tc.query, nil)
		if r.Status != http.StatusBadRequest || r.JSON()["code"] != "invalid_payload" {
			t.Errorf("?%s: %d %s", tc.query, r.Status, r.Body)
			continue
		}
		got := fieldErrorsOf(t, r)
		for attr, code := range tc.attrs {
			if got[attr] != code {
				t.Errorf("?%s: errors %v, want %s on %s", tc.query, got, code, attr)
			}
		}
		if len(got) != len(tc.attrs) {
			t.Errorf("?%s: errors %v, want only %v", tc.query, got, tc.attrs)
		}
	}
	if r := p.As(p.token, http.MethodGet, feedPath+"?import_supplier=NOPE", nil); r.Status != http.StatusNotFound || r.JSON()["code"] != "not_found" {
		t.Errorf("unknown supplier: %d %s", r.Status, r.Body)
	}
	if r := p.Request(http.MethodGet, feedPath, nil); r.Status != http.StatusUnauthorized {
		t.Errorf("no token: %d %s", r.Status, r.Body)
	}
	// The good forms: an empty after is the start; wait=0s answers at once.
	for _, q := range []string{"after=", "after=latest", "wait=0s", "limit=1000", "limit=1", "import_supplier=DEMO_ENERGY&type=import_process.complete-v1"} {
		readFeed(t, p.Stack, p.token, q)
	}
}
