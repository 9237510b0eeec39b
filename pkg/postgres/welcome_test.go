package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

type welcomeRowState struct {
	SentAt    *time.Time
	Attempts  int
	LastError *string
}

func welcomeState(t *testing.T, db *postgres.DB, id int64) welcomeRowState {
	t.Helper()
	var s welcomeRowState
	if err := db.Gorm().WithContext(t.Context()).
		Raw(`SELECT sent_at, attempts, last_error FROM welcome_emails WHERE id = ?`, id).Scan(&s).Error; err != nil {
		t.Fatal(err)
	}
	return s
}

// TestWelcomeEmailStore runs the single-row cases on one shared database
// (one fixture each), to keep the package fast.
func TestWelcomeEmailStore(t *testing.T) {
	t.Parallel()
	d := testutil.NewDatabase(t)
	for i, tc := range []struct {
		name string
		run  func(*testing.T, *testutil.Database, int)
	}{
		{"Loads", testWelcomeEmailLoads},
		{"ClaimSendsOnce", testClaimWelcomeEmailSendsOnce},
		{"ClaimConcurrent", testClaimWelcomeEmailConcurrent},
		{"ClaimFailureThenRetry", testClaimWelcomeEmailFailureThenRetry},
		{"ClaimRecordsAfterCancel", testClaimWelcomeEmailRecordsAfterCancel},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, d, i+1) })
	}
}

func testWelcomeEmailLoads(t *testing.T, d *testutil.Database, n int) {
	id := testutil.WelcomeEmailRow(t, d.DB, n, "ada@example.com")

	w, err := d.DB.WelcomeEmail(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := postgres.WelcomeEmail{ID: id, AccountID: w.AccountID, Email: "ada@example.com", GivenName: "Ada",
		FamilyName: "Lovelace", Title: "Dr", SupplierCode: fmt.Sprintf("WELCOME_%d", n), PlatformAccountNumber: fmt.Sprintf("A-%08X", 0xABC00000+n)}
	if w.AccountID == 0 || w.SentAt != nil || w != want {
		t.Fatalf("WelcomeEmail = %+v, want %+v", w, want)
	}

	if _, err := d.DB.WelcomeEmail(t.Context(), id+1000); !errors.Is(err, postgres.ErrWelcomeEmailNotFound) {
		t.Fatalf("missing row: err = %v, want ErrWelcomeEmailNotFound", err)
	}
	sent, err := d.DB.ClaimWelcomeEmail(t.Context(), id+1000, func(postgres.WelcomeEmail) error {
		t.Error("send called for a missing row")
		return nil
	})
	if sent || !errors.Is(err, postgres.ErrWelcomeEmailNotFound) {
		t.Fatalf("claim missing row: (%v, %v), want ErrWelcomeEmailNotFound", sent, err)
	}
}

func testClaimWelcomeEmailSendsOnce(t *testing.T, d *testutil.Database, n int) {
	id := testutil.WelcomeEmailRow(t, d.DB, n, "ada@example.com")

	var got []postgres.WelcomeEmail
	send := func(w postgres.WelcomeEmail) error { got = append(got, w); return nil }
	sent, err := d.DB.ClaimWelcomeEmail(t.Context(), id, send)
	if err != nil || !sent {
		t.Fatalf("first claim: (%v, %v), want (true, nil)", sent, err)
	}
	if len(got) != 1 || got[0].Email != "ada@example.com" || got[0].PlatformAccountNumber != fmt.Sprintf("A-%08X", 0xABC00000+n) {
		t.Fatalf("send got %+v", got)
	}
	st := welcomeState(t, d.DB, id)
	if st.SentAt == nil || st.Attempts != 1 || st.LastError != nil {
		t.Fatalf("after sending: %+v", st)
	}

	sent, err = d.DB.ClaimWelcomeEmail(t.Context(), id, send)
	if err != nil || sent {
		t.Fatalf("second claim: (%v, %v), want (false, nil)", sent, err)
	}
	if len(got) != 1 {
		t.Fatalf("send called %d times, want 1", len(got))
	}
	if st2 := welcomeState(t, d.DB, id); st2.Attempts != 1 || !st2.SentAt.Equal(*st.SentAt) {
		t.Fatalf("second claim changed the row: %+v", st2)
	}
	w, err := d.DB.WelcomeEmail(t.Context(), id)
	if err != nil || w.SentAt == nil {
		t.Fatalf("WelcomeEmail after sending: %+v, %v", w, err)
	}
}

func testClaimWelcomeEmailConcurrent(t *testing.T, d *testutil.Database, n int) {
	id := testutil.WelcomeEmailRow(t, d.DB, n, "ada@example.com")

	var calls, sentCount atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for range 5 {
		wg.Go(func() {
			sent, err := d.DB.ClaimWelcomeEmail(t.Context(), id, func(postgres.WelcomeEmail) error {
				calls.Add(1)
				time.Sleep(50 * time.Millisecond) // a slow SMTP server widens the race
				return nil
			})
			if sent {
				sentCount.Add(1)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if calls.Load() != 1 || sentCount.Load() != 1 {
		t.Fatalf("send called %d times, %d claims reported sent; want 1 and 1", calls.Load(), sentCount.Load())
	}
	if st := welcomeState(t, d.DB, id); st.SentAt == nil || st.Attempts != 1 {
		t.Fatalf("row %+v", st)
	}
}

func testClaimWelcomeEmailFailureThenRetry(t *testing.T, d *testutil.Database, n int) {
	id := testutil.WelcomeEmailRow(t, d.DB, n, "ada@example.com")

	boom := errors.New("451 4.3.0 try later")
	sent, err := d.DB.ClaimWelcomeEmail(t.Context(), id, func(postgres.WelcomeEmail) error { return boom })
	if sent || !errors.Is(err, boom) {
		t.Fatalf("failing send: (%v, %v), want (false, boom)", sent, err)
	}
	st := welcomeState(t, d.DB, id)
	if st.SentAt != nil || st.Attempts != 1 || st.LastError == nil || *st.LastError != boom.Error() {
		t.Fatalf("after a failure: %+v", st)
	}

	sent, err = d.DB.ClaimWelcomeEmail(t.Context(), id, func(postgres.WelcomeEmail) error { return nil })
	if err != nil || !sent {
		t.Fatalf("retry: (%v, %v), want (true, nil)", sent, err)
	}
	if st := welcomeState(t, d.DB, id); st.SentAt == nil || st.Attempts != 2 || st.LastError != nil {
		t.Fatalf("after the retry: %+v", st)
	}
}

func testClaimWelcomeEmailRecordsAfterCancel(t *testing.T, d *testutil.Database, n int) {
	id := testutil.WelcomeEmailRow(t, d.DB, n, "ada@example.com")

	// The worker is told to stop while the SMTP exchange runs: the outcome
	// is still recorded.
	ctx, cancel := context.WithCancel(t.Context())
	sent, err := d.DB.ClaimWelcomeEmail(ctx, id, func(postgres.WelcomeEmail) error { cancel(); return nil })
	if err != nil || !sent {
		t.Fatalf("claim cancelled during send: (%v, %v), want (true, nil)", sent, err)
	}
	if st := welcomeState(t, d.DB, id); st.SentAt == nil {
		t.Fatalf("sent e-mail not recorded: %+v", st)
	}
}

func TestUnsentWelcomeEmails(t *testing.T) {
	t.Parallel()
	d := testutil.NewDatabase(t)
	ctx := t.Context()
	g := d.DB.Gorm().WithContext(ctx)
	oldest := testutil.WelcomeEmailRow(t, d.DB, 1, "a@example.com")
	old := testutil.WelcomeEmailRow(t, d.DB, 2, "b@example.com")
	oldSent := testutil.WelcomeEmailRow(t, d.DB, 3, "c@example.com")
	oldGivenUp := testutil.WelcomeEmailRow(t, d.DB, 4, "d@example.com")
	oldFailed := testutil.WelcomeEmailRow(t, d.DB, 5, "e@example.com")
	fresh := testutil.WelcomeEmailRow(t, d.DB, 6, "f@example.com")
	for id, age := range map[int64]string{oldest: "3 hours", old: "2 hours", oldSent: "2 hours", oldGivenUp: "2 hours", oldFailed: "1 hour"} {
		if err := g.Exec(`UPDATE welcome_emails SET created_at = now() - ?::interval WHERE id = ?`, age, id).Error; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.DB.ClaimWelcomeEmail(ctx, oldSent, func(postgres.WelcomeEmail) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DB.ClaimWelcomeEmail(ctx, oldGivenUp, func(postgres.WelcomeEmail) error {
		return fmt.Errorf("%w: 550 no such user", postgres.ErrUndeliverable)
	}); !errors.Is(err, postgres.ErrUndeliverable) {
		t.Fatalf("undeliverable claim: %v", err)
	}
	if _, err := d.DB.ClaimWelcomeEmail(ctx, oldFailed, func(postgres.WelcomeEmail) error {
		return errors.New("connection refused")
	}); err == nil {
		t.Fatal("failing send reported success")
	}

	for _, tc := range []struct {
		olderThan time.Duration
		limit     int
		want      []int64
	}{
		{30 * time.Minute, 10, []int64{oldest, old, oldFailed}},
		{30 * time.Minute, 2, []int64{oldest, old}},
		{90 * time.Minute, 10, []int64{oldest, old}},
		{0, 10, []int64{oldest, old, oldFailed, fresh}},
		{time.Minute, 0, nil},
	} {
		got, err := d.DB.UnsentWelcomeEmails(ctx, tc.olderThan, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("UnsentWelcomeEmails(%v, %d) = %v, want %v", tc.olderThan, tc.limit, got, tc.want)
		}
	}
}
