package postgres_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

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
		{"ClaimOnce", testClaimWelcomeEmailOnce},
		{"ClaimConcurrent", testClaimWelcomeEmailConcurrent},
		{"NotSentThenRetry", testWelcomeEmailNotSentThenRetry},
		{"FinishOnlyByTheCurrentClaim", testFinishWelcomeEmailCurrentClaim},
		{"StaleClaimBecomesUnknown", testWelcomeEmailStaleClaim},
		{"ResendOnlyUnknown", testResendWelcomeEmail},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, d, i+1) })
	}
}

func claim(t *testing.T, d *testutil.Database, id int64) postgres.WelcomeEmail {
	t.Helper()
	w, claimed, err := d.DB.ClaimWelcomeEmail(t.Context(), id)
	if err != nil || !claimed {
		t.Fatalf("claim %d: (%+v, %v, %v), want claimed", id, w, claimed, err)
	}
	return w
}

func finish(t *testing.T, d *testutil.Database, w postgres.WelcomeEmail, state, failure string) {
	t.Helper()
	if ok, err := d.DB.FinishWelcomeEmail(t.Context(), w.ID, w.Attempts, state, failure); err != nil || !ok {
		t.Fatalf("finish %d as %s: (%v, %v), want recorded", w.ID, state, ok, err)
	}
}

func load(t *testing.T, d *testutil.Database, id int64) postgres.WelcomeEmail {
	t.Helper()
	w, err := d.DB.WelcomeEmail(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func testWelcomeEmailLoads(t *testing.T, d *testutil.Database, n int) {
	id := testutil.WelcomeEmailRow(t, d.DB, n, "ada@example.com")

	w := load(t, d, id)
	want := postgres.WelcomeEmail{ID: id, AccountID: w.AccountID, Email: "ada@example.com", GivenName: "Ada",
		FamilyName: "Lovelace", Title: "Dr", SupplierCode: fmt.Sprintf("WELCOME_%d", n),
		PlatformAccountNumber: fmt.Sprintf("A-%08X", 0xABC00000+n), State: postgres.WelcomePending}
	if w.AccountID == 0 || w != want {
		t.Fatalf("WelcomeEmail = %+v, want %+v", w, want)
	}

	if _, err := d.DB.WelcomeEmail(t.Context(), id+1000); !errors.Is(err, postgres.ErrWelcomeEmailNotFound) {
		t.Fatalf("missing row: err = %v, want ErrWelcomeEmailNotFound", err)
	}
	if _, claimed, err := d.DB.ClaimWelcomeEmail(t.Context(), id+1000); claimed || !errors.Is(err, postgres.ErrWelcomeEmailNotFound) {
		t.Fatalf("claim missing row: (%v, %v), want ErrWelcomeEmailNotFound", claimed, err)
	}
}

func testClaimWelcomeEmailOnce(t *testing.T, d *testutil.Database, n int) {
	id := testutil.WelcomeEmailRow(t, d.DB, n, "ada@example.com")

	w := claim(t, d, id)
	wantID := fmt.Sprintf("welcome-%d.A-%08X", id, 0xABC00000+n)
	if w.State != postgres.WelcomeSending || w.Attempts != 1 || w.ClaimedAt == nil || w.MessageID != wantID {
		t.Fatalf("claimed row %+v, want sending, attempt 1, Message-ID %s", w, wantID)
	}
	if again, claimed, err := d.DB.ClaimWelcomeEmail(t.Context(), id); err != nil || claimed || again.State != postgres.WelcomeSending {
		t.Fatalf("second claim while sending: (%+v, %v, %v), want not claimed", again, claimed, err)
	}
	finish(t, d, w, postgres.WelcomeSent, "")
	sent := load(t, d, id)
	if sent.State != postgres.WelcomeSent || sent.SentAt == nil || sent.Attempts != 1 || sent.LastError != nil {
		t.Fatalf("after sending: %+v", sent)
	}
	if again, claimed, err := d.DB.ClaimWelcomeEmail(t.Context(), id); err != nil || claimed || again.State != postgres.WelcomeSent {
		t.Fatalf("claim after sending: (%+v, %v, %v), want not claimed", again, claimed, err)
	}
}

func testClaimWelcomeEmailConcurrent(t *testing.T, d *testutil.Database, n int) {
	id := testutil.WelcomeEmailRow(t, d.DB, n, "ada@example.com")

	var claims atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for range 5 {
		wg.Go(func() {
			_, claimed, err := d.DB.ClaimWelcomeEmail(t.Context(), id)
			if claimed {
				claims.Add(1)
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
	if claims.Load() != 1 {
		t.Fatalf("%d concurrent claims succeeded, want 1", claims.Load())
	}
	if w := load(t, d, id); w.State != postgres.WelcomeSending || w.Attempts != 1 {
		t.Fatalf("row %+v", w)
	}
}

func testWelcomeEmailNotSentThenRetry(t *testing.T, d *testutil.Database, n int) {
	id := testutil.WelcomeEmailRow(t, d.DB, n, "ada@example.com")

	w := claim(t, d, id)
	finish(t, d, w, postgres.WelcomePending, "451 4.3.0 try later")
	if got := load(t, d, id); got.State != postgres.WelcomePending || got.Attempts != 1 || got.LastError == nil || *got.LastError != "451 4.3.0 try later" {
		t.Fatalf("after a definite failure: %+v", got)
	}
	w = claim(t, d, id)
	if w.Attempts != 2 {
		t.Fatalf("second claim is attempt %d, want 2", w.Attempts)
	}
	finish(t, d, w, postgres.WelcomeSent, "")
	if got := load(t, d, id); got.State != postgres.WelcomeSent || got.SentAt == nil || got.LastError != nil {
		t.Fatalf("after the retry: %+v", got)
	}
}

func testFinishWelcomeEmailCurrentClaim(t *testing.T, d *testutil.Database, n int) {
	id := testutil.WelcomeEmailRow(t, d.DB, n, "ada@example.com")
	ctx := t.Context()

	first := claim(t, d, id)
	finish(t, d, first, postgres.WelcomePending, "connection refused")
	second := claim(t, d, id)
	// The first attempt's outcome arrives late: it must not touch the second's claim.
	if ok, err := d.DB.FinishWelcomeEmail(ctx, id, first.Attempts, postgres.WelcomeSent, ""); err != nil || ok {
		t.Fatalf("finish by a superseded claim: (%v, %v), want not recorded", ok, err)
	}
	if ok, err := d.DB.FinishWelcomeEmail(ctx, id, second.Attempts, "bogus", ""); err == nil || ok {
		t.Fatalf("invalid outcome: (%v, %v), want an error", ok, err)
	}
	finish(t, d, second, postgres.WelcomeUndeliverable, "550 no such user")
	// Once final, nothing changes it.
	if ok, err := d.DB.FinishWelcomeEmail(ctx, id, second.Attempts, postgres.WelcomeSent, ""); err != nil || ok {
		t.Fatalf("finish after undeliverable: (%v, %v), want not recorded", ok, err)
	}
	if got := load(t, d, id); got.State != postgres.WelcomeUndeliverable || got.SentAt != nil {
		t.Fatalf("row %+v", got)
	}
}

func testWelcomeEmailStaleClaim(t *testing.T, d *testutil.Database, n int) {
	id := testutil.WelcomeEmailRow(t, d.DB, n, "ada@example.com")
	ctx := t.Context()

	w := claim(t, d, id)
	if flagged, err := d.DB.FlagStaleWelcomeEmail(ctx, id, w.Attempts, time.Hour); err != nil || flagged {
		t.Fatalf("fresh claim flagged: (%v, %v)", flagged, err)
	}
	if flagged, err := d.DB.FlagStaleWelcomeEmail(ctx, id, w.Attempts+1, 0); err != nil || flagged {
		t.Fatalf("another claim's number flagged: (%v, %v)", flagged, err)
	}
	if flagged, err := d.DB.FlagStaleWelcomeEmail(ctx, id, w.Attempts, 0); err != nil || !flagged {
		t.Fatalf("stale claim: (%v, %v), want flagged", flagged, err)
	}
	got := load(t, d, id)
	if got.State != postgres.WelcomeUnknown || got.LastError == nil {
		t.Fatalf("after flagging: %+v", got)
	}
	if _, claimed, err := d.DB.ClaimWelcomeEmail(ctx, id); err != nil || claimed {
		t.Fatalf("claim of an unknown e-mail: (%v, %v), want not claimed", claimed, err)
	}
	// The attempt thought dead comes back knowing it sent: that wins.
	finish(t, d, w, postgres.WelcomeSent, "")
	if got := load(t, d, id); got.State != postgres.WelcomeSent || got.SentAt == nil {
		t.Fatalf("late outcome: %+v", got)
	}
}

func testResendWelcomeEmail(t *testing.T, d *testutil.Database, n int) {
	id := testutil.WelcomeEmailRow(t, d.DB, n, "ada@example.com")
	ctx := t.Context()

	if err := d.DB.ResendWelcomeEmail(ctx, id); !errors.Is(err, postgres.ErrWelcomeEmailNotUnknown) {
		t.Fatalf("resend of a pending e-mail: %v, want ErrWelcomeEmailNotUnknown", err)
	}
	if err := d.DB.ResendWelcomeEmail(ctx, id+1000); !errors.Is(err, postgres.ErrWelcomeEmailNotFound) {
		t.Fatalf("resend of a missing e-mail: %v, want ErrWelcomeEmailNotFound", err)
	}
	w := claim(t, d, id)
	finish(t, d, w, postgres.WelcomeUnknown, "no reply after the message")
	if err := d.DB.ResendWelcomeEmail(ctx, id); err != nil {
		t.Fatal(err)
	}
	again := claim(t, d, id)
	if again.Attempts != 2 || again.MessageID != w.MessageID {
		t.Fatalf("claim after resend: %+v, want attempt 2 with Message-ID %s", again, w.MessageID)
	}
	// The first attempt cannot overwrite the resend's outcome.
	if ok, err := d.DB.FinishWelcomeEmail(ctx, id, w.Attempts, postgres.WelcomePending, ""); err != nil || ok {
		t.Fatalf("finish by the superseded claim: (%v, %v)", ok, err)
	}
}

func TestUnknownAndUnsentWelcomeEmails(t *testing.T) {
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
	oldClaim := testutil.WelcomeEmailRow(t, d.DB, 7, "g@example.com")
	freshClaim := testutil.WelcomeEmailRow(t, d.DB, 8, "h@example.com")
	unknown := testutil.WelcomeEmailRow(t, d.DB, 9, "i@example.com")
	for id, age := range map[int64]string{oldest: "3 hours", old: "2 hours", oldSent: "2 hours", oldGivenUp: "2 hours",
		oldFailed: "1 hour", oldClaim: "5 hours", freshClaim: "4 hours", unknown: "4 hours"} {
		if err := g.Exec(`UPDATE welcome_emails SET created_at = now() - ?::interval WHERE id = ?`, age, id).Error; err != nil {
			t.Fatal(err)
		}
	}
	finish(t, d, claim(t, d, oldSent), postgres.WelcomeSent, "")
	finish(t, d, claim(t, d, oldGivenUp), postgres.WelcomeUndeliverable, "550 no such user")
	finish(t, d, claim(t, d, oldFailed), postgres.WelcomePending, "connection refused")
	finish(t, d, claim(t, d, unknown), postgres.WelcomeUnknown, "no reply")
	claim(t, d, oldClaim)
	claim(t, d, freshClaim)
	if err := g.Exec(`UPDATE welcome_emails SET claimed_at = now() - interval '2 hours' WHERE id = ?`, oldClaim).Error; err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		olderThan time.Duration
		limit     int
		want      []int64
	}{
		{30 * time.Minute, 10, []int64{oldClaim, oldest, old, oldFailed}},
		{30 * time.Minute, 2, []int64{oldClaim, oldest}},
		{150 * time.Minute, 10, []int64{oldest}},
		{0, 10, []int64{oldClaim, freshClaim, oldest, old, oldFailed, fresh}},
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

	list, err := d.DB.UnknownWelcomeEmails(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != unknown || list[0].Email != "i@example.com" || list[0].MessageID == "" || list[0].ClaimedAt == nil {
		t.Fatalf("UnknownWelcomeEmails = %+v, want only %d", list, unknown)
	}
}
