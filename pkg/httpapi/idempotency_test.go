package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// Idempotency keys (CONTRACT §12) through the real router, Postgres and Redis.

// assertReplay checks that again is first replayed: same status, body bytes
// and stored headers, marked Idempotent-Replayed, while first was not.
func assertReplay(t *testing.T, first, again testutil.Response) {
	t.Helper()
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the first answer is marked as a replay: %v", first.Header)
	}
	if again.Status != first.Status || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("replay %d %q, want %d %q", again.Status, again.Body, first.Status, first.Body)
	}
	if again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay without Idempotent-Replayed: true: %v", again.Header)
	}
	for _, h := range []string{"Content-Type", "Location", "Retry-After"} {
		if again.Header.Get(h) != first.Header.Get(h) {
			t.Fatalf("replayed %s %q, want %q", h, again.Header.Get(h), first.Header.Get(h))
		}
	}
	if again.Header.Get("X-Request-ID") == first.Header.Get("X-Request-ID") {
		t.Fatal("the replay reuses the first request's X-Request-ID")
	}
}

func assertRan(t *testing.T, r testutil.Response, status int) {
	t.Helper()
	if r.Status != status || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("status %d (replayed %q), want %d, run afresh: %s", r.Status, r.Header.Get("Idempotent-Replayed"), status, r.Body)
	}
}

func TestIdempotencyKeys(t *testing.T) {
	p := newPostImport(t)
	key := func(k string) []string { return []string{"Idempotency-Key", k} }
	post := func(path string, body any, headers ...string) testutil.Response {
		t.Helper()
		return p.As(p.token, http.MethodPost, path, body, headers...)
	}
	ctx := context.Background()
	sup, err := p.DB.SupplierByCode(ctx, "DEMO_ENERGY")
	if err != nil {
		t.Fatal(err)
	}
	versions := func(external string) int {
		t.Helper()
		proc, err := p.DB.Process(ctx, sup.ID, external)
		if err != nil {
			t.Fatal(err)
		}
		v, err := p.DB.StagedVersions(ctx, proc.ID)
		if err != nil {
			t.Fatal(err)
		}
		return len(v)
	}

	t.Run("staging replayed, not run twice", func(t *testing.T) {
		first := post(stagePath, account(t, "EXT-IK1"), key("stage-ik1")...)
		assertRan(t, first, http.StatusCreated)
		again := post(stagePath, account(t, "EXT-IK1"), key("stage-ik1")...)
		assertReplay(t, first, again) // a second staging would answer 200
		if n := versions("EXT-IK1"); n != 1 {
			t.Fatalf("%d staged versions after a replay, want 1", n)
		}
		// Without the trailing slash it is the same path.
		assertReplay(t, first, post(strings.TrimSuffix(stagePath, "/"), account(t, "EXT-IK1"), key("stage-ik1")...))
	})

	t.Run("create and notes replayed, not run twice", func(t *testing.T) {
		if r := post(stagePath, account(t, "EXT-IK2")); r.Status != http.StatusCreated {
			t.Fatalf("stage: %d %s", r.Status, r.Body)
		}
		req := map[string]any{"external_account_number": "EXT-IK2", "import_supplier_code": "DEMO_ENERGY", "operations_team_name": "Migrations"}
		first := post(createPath, req, key("create-ik2")...)
		assertRan(t, first, http.StatusCreated)
		// Run again, a create of an imported account answers 400 account_already_imported.
		assertReplay(t, first, post(createPath, req, key("create-ik2")...))

		notes := `{"import_supplier":"DEMO_ENERGY","external_account_number":"EXT-IK2","notes":[{"body":"Called about the move."}]}`
		count := func() int64 {
			return p.count(`SELECT count(*) FROM account_notes n JOIN accounts a ON a.id = n.account_id WHERE a.external_account_number = 'EXT-IK2'`)
		}
		before := count()
		firstNotes := post(notesPath, notes, key("notes-ik2")...)
		assertRan(t, firstNotes, http.StatusCreated)
		if !strings.Contains(string(firstNotes.Body), "NOTE_CREATION_SUCCESS") {
			t.Fatalf("notes: %s", firstNotes.Body)
		}
		// Run again it would say NOTE_ALREADY_EXISTS; replayed it says what the first said.
		assertReplay(t, firstNotes, post(notesPath, notes, key("notes-ik2")...))
		if n := count(); n != before+1 {
			t.Fatalf("%d notes added, want 1", n-before)
		}
	})

	t.Run("a 400 is stored and replayed", func(t *testing.T) {
		bad := strings.Replace(account(t, "EXT-IK3"), `"SW1A 2AA"`, `""`, 1)
		first := post(validatePath, bad, key("validate-bad")...)
		assertEnvelope(t, first, http.StatusBadRequest, "account_failed_validation")
		assertReplay(t, first, post(validatePath, bad, key("validate-bad")...))
	})

	t.Run("key reused with another body, path or query: 422", func(t *testing.T) {
		// stage-ik1 was stored for staging EXT-IK1.
		assertEnvelope(t, post(stagePath, account(t, "EXT-IK9"), key("stage-ik1")...), http.StatusUnprocessableEntity, "idempotency_key_reused")
		assertEnvelope(t, post(validatePath, account(t, "EXT-IK1"), key("stage-ik1")...), http.StatusUnprocessableEntity, "idempotency_key_reused")
		tx := body("EXT-IK2", "transactions", charge("T-IK", "2025-06-02", "1.00"))
		assertRan(t, post(transactionsPath+"?check_previously_added=true", tx, key("tx-ik")...), http.StatusCreated)
		assertEnvelope(t, post(transactionsPath+"?check_previously_added=false", tx, key("tx-ik")...), http.StatusUnprocessableEntity, "idempotency_key_reused")
		if n := versions("EXT-IK1"); n != 1 {
			t.Fatalf("a refused reuse staged: %d versions", n)
		}
		if n := p.count(`SELECT count(*) FROM import_processes WHERE external_account_number = 'EXT-IK9'`); n != 0 {
			t.Fatal("a refused reuse staged EXT-IK9")
		}
	})

	t.Run("malformed keys: 400", func(t *testing.T) {
		for name, k := range map[string]string{"256 characters": strings.Repeat("k", 256), "not ASCII": "clé-1", "control character": "a\tb"} {
			assertEnvelope(t, post(validatePath, account(t, "EXT-IK4"), key(k)...), http.StatusBadRequest, "invalid_idempotency_key")
			if n := p.count(`SELECT count(*) FROM idempotency_keys WHERE key = ?`, k); n != 0 {
				t.Errorf("%s: the key was stored", name)
			}
		}
		assertRan(t, post(validatePath, account(t, "EXT-IK4"), key(strings.Repeat("k", 255))...), http.StatusOK)
	})

	t.Run("keys are per organisation", func(t *testing.T) {
		other := p.Tenant("Second Partner", "DEMO_ENERGY")
		notes := `{"import_supplier":"DEMO_ENERGY","external_account_number":"EXT-IK2","notes":[{"body":"Same key, other partner."}]}`
		first := post(notesPath, notes, key("shared-key")...)
		assertRan(t, first, http.StatusCreated)
		// The same key and request from another organisation runs: the note
		// exists by now, so it says NOTE_ALREADY_EXISTS.
		second := p.As(other.Token, http.MethodPost, notesPath, notes, key("shared-key")...)
		assertRan(t, second, http.StatusCreated)
		if !strings.Contains(string(second.Body), "NOTE_ALREADY_EXISTS") {
			t.Fatalf("other organisation's request was not run: %s", second.Body)
		}
		assertReplay(t, second, p.As(other.Token, http.MethodPost, notesPath, notes, key("shared-key")...))
		assertReplay(t, first, post(notesPath, notes, key("shared-key")...))
	})

	t.Run("a 5xx is not stored: the retry runs", func(t *testing.T) {
		// A real failure inside the handler's transaction: Postgres refuses the insert.
		must(t, p.DB.Gorm().Exec(`CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE EXCEPTION 'refused by the test'; END $$`).Error)
		must(t, p.DB.Gorm().Exec(`CREATE TRIGGER test_refuse BEFORE INSERT ON account_notes FOR EACH ROW EXECUTE FUNCTION test_refuse()`).Error)
		notes := `{"import_supplier":"DEMO_ENERGY","external_account_number":"EXT-IK2","notes":[{"body":"After a failure."}]}`
		assertEnvelope(t, post(notesPath, notes, key("notes-500")...), http.StatusInternalServerError, "server_error")
		must(t, p.DB.Gorm().Exec(`DROP TRIGGER test_refuse ON account_notes`).Error)
		r := post(notesPath, notes, key("notes-500")...)
		assertRan(t, r, http.StatusCreated)
		if !strings.Contains(string(r.Body), "NOTE_CREATION_SUCCESS") {
			t.Fatalf("retry: %s", r.Body)
		}
	})

	t.Run("an expired key runs again, and the sweeper deletes expired keys", func(t *testing.T) {
		expire := func(k string) {
			t.Helper()
			must(t, p.DB.Gorm().Exec(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = ?`, k).Error)
		}
		first := post(stagePath, account(t, "EXT-IK5"), key("stage-ik5")...)
		assertRan(t, first, http.StatusCreated)
		expire("stage-ik5")
		assertRan(t, post(stagePath, account(t, "EXT-IK5"), key("stage-ik5")...), http.StatusOK)
		if n := versions("EXT-IK5"); n != 2 {
			t.Fatalf("%d staged versions, want 2: the expired key's request ran again", n)
		}
		// The rerun's answer is the one kept now.
		if r := post(stagePath, account(t, "EXT-IK5"), key("stage-ik5")...); r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("after the rerun: %d %v", r.Status, r.Header)
		}

		// A worker sweeps when it starts, then every minute.
		assertRan(t, post(validatePath, account(t, "EXT-IK6"), key("validate-ik6")...), http.StatusOK)
		expire("validate-ik6")
		live := p.count(`SELECT count(*) FROM idempotency_keys WHERE expires_at > now()`)
		p.StartWorker()
		deadline := time.Now().Add(15 * time.Second)
		for p.count(`SELECT count(*) FROM idempotency_keys WHERE key = 'validate-ik6'`) != 0 {
			if time.Now().After(deadline) {
				t.Fatal("the worker did not sweep the expired key")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if n := p.count(`SELECT count(*) FROM idempotency_keys`); n != live {
			t.Fatalf("%d keys left, want the %d live ones", n, live)
		}
	})
}

// TestIdempotencyKeyInFlight: while a request with a key runs, the same key
// gets 409 at once and nothing runs twice; a claim abandoned by a process
// that died is taken over after its lease; a 429 is not stored.
func TestIdempotencyKeyInFlight(t *testing.T) {
	const wait = 3 * time.Second
	// No worker: a create waits PROCESS_WAIT for its job, then answers 202.
	st := testutil.NewStack(t, func(c *testutil.StackConfig) { c.ProcessWait = wait })
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	ctx := context.Background()
	if _, err := st.DB.CreateTeam(ctx, "Migrations"); err != nil {
		t.Fatal(err)
	}
	sup, err := st.DB.SupplierByCode(ctx, "DEMO_ENERGY")
	if err != nil {
		t.Fatal(err)
	}
	stage := func(external string) {
		t.Helper()
		if r := st.As(ten.Token, http.MethodPost, stagePath, account(t, external)); r.Status != http.StatusCreated {
			t.Fatalf("stage %s: %d %s", external, r.Status, r.Body)
		}
	}
	create := func(external, key string, headers ...string) testutil.Response {
		t.Helper()
		req := map[string]any{"external_account_number": external, "import_supplier_code": "DEMO_ENERGY", "operations_team_name": "Migrations"}
		return st.As(ten.Token, http.MethodPost, createPath, req, append([]string{"Idempotency-Key", key}, headers...)...)
	}
	inFlight := func(key string) bool {
		var n int64
		must(t, st.DB.Gorm().Raw(`SELECT count(*) FROM idempotency_keys WHERE key = ? AND state = 'in_flight'`, key).Scan(&n).Error)
		return n == 1
	}

	t.Run("a 429 is not stored: the retry runs", func(t *testing.T) {
		must(t, st.DB.SetConcurrencyLimit(ctx, 1))
		stage("EXT-IF3")
		stage("EXT-IF4")
		// EXT-IF3 takes the one slot and keeps it: no worker drains it.
		assertRan(t, create("EXT-IF3", "create-if3", "Prefer", "respond-async"), http.StatusAccepted)
		assertEnvelope(t, create("EXT-IF4", "create-if4", "Prefer", "respond-async"), http.StatusTooManyRequests, "concurrency_limit_exceeded")
		must(t, st.DB.SetConcurrencyLimit(ctx, 0))
		assertRan(t, create("EXT-IF4", "create-if4", "Prefer", "respond-async"), http.StatusAccepted)
	})

	t.Run("concurrent same key: 409, one execution", func(t *testing.T) {
		stage("EXT-IF1")
		done := make(chan testutil.Response, 1)
		go func() { done <- create("EXT-IF1", "create-if1") }()
		for deadline := time.Now().Add(wait / 2); !inFlight("create-if1"); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the first create never claimed its key")
			}
		}
		start := time.Now()
		busy := create("EXT-IF1", "create-if1")
		assertEnvelope(t, busy, http.StatusConflict, "idempotency_key_in_use")
		if took := time.Since(start); took > wait/2 {
			t.Fatalf("the 409 took %v: it waited for the job", took)
		}
		if busy.Header.Get("Retry-After") == "" {
			t.Error("409 without Retry-After")
		}
		first := <-done
		assertRan(t, first, http.StatusAccepted)
		assertReplay(t, first, create("EXT-IF1", "create-if1"))
		proc, err := st.DB.Process(ctx, sup.ID, "EXT-IF1")
		if err != nil {
			t.Fatal(err)
		}
		if proc.Attempt != 1 {
			t.Fatalf("attempt %d, want 1", proc.Attempt)
		}
	})

	t.Run("abandoned claim taken over after its lease", func(t *testing.T) {
		// A request whose API process died mid-way left its claim in flight.
		body := []byte(account(t, "EXT-IF2"))
		sum := sha256.Sum256(body)
		var orgID int64
		must(t, st.DB.Gorm().Raw(`SELECT id FROM organisations WHERE name = 'Demo Partner'`).Scan(&orgID).Error)
		c, err := st.DB.ClaimIdempotencyKey(ctx, postgres.IdempotencyRequest{OrganisationID: orgID, Key: "stage-if2",
			Method: http.MethodPost, Path: stagePath, BodySHA256: sum[:]}, time.Hour, time.Hour)
		if err != nil || !c.Claimed {
			t.Fatal(c, err)
		}
		r := st.As(ten.Token, http.MethodPost, stagePath, body, "Idempotency-Key", "stage-if2")
		assertEnvelope(t, r, http.StatusConflict, "idempotency_key_in_use")
		must(t, st.DB.Gorm().Exec(`UPDATE idempotency_keys SET locked_until = now() - interval '1 second' WHERE key = 'stage-if2'`).Error)
		first := st.As(ten.Token, http.MethodPost, stagePath, body, "Idempotency-Key", "stage-if2")
		assertRan(t, first, http.StatusCreated)
		assertReplay(t, first, st.As(ten.Token, http.MethodPost, stagePath, body, "Idempotency-Key", "stage-if2"))
	})

}
