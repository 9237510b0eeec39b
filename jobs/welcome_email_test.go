package jobs_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/gridshift/dataimport/jobs"
	"github.com/gridshift/dataimport/pkg/email"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
	"github.com/gridshift/dataimport/pkg/testutil"
)

type welcomeState struct {
	SentAt    *time.Time
	Attempts  int
	LastError *string
}

func welcomeRowState(t *testing.T, db *postgres.DB, id int64) welcomeState {
	t.Helper()
	var s welcomeState
	if err := db.Gorm().WithContext(t.Context()).
		Raw(`SELECT sent_at, attempts, last_error FROM welcome_emails WHERE id = ?`, id).Scan(&s).Error; err != nil {
		t.Fatal(err)
	}
	return s
}

func welcomeTask(t *testing.T, id int64) *asynq.Task {
	t.Helper()
	task, err := queue.WelcomeEmail{EmailID: id}.Task()
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func TestWelcomeEmailHandler(t *testing.T) {
	d := testutil.NewDatabase(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	// newHandler wires the handler to the real database and a fresh SMTP server.
	newHandler := func(t *testing.T) (*jobs.WelcomeEmailHandler, *testutil.SMTPServer) {
		srv := testutil.NewSMTPServer(t)
		sender, err := email.NewSender("smtp://"+srv.Addr, "Welcome <welcome@gridshift.test>")
		if err != nil {
			t.Fatal(err)
		}
		return &jobs.WelcomeEmailHandler{Store: d.DB, Sender: sender, Log: quiet}, srv
	}

	t.Run("DeliversOnce", func(t *testing.T) {
		h, srv := newHandler(t)
		id := testutil.WelcomeEmailRow(t, d.DB, 1, "grace@example.com")
		for range 2 {
			if err := h.ProcessTask(t.Context(), welcomeTask(t, id)); err != nil {
				t.Fatalf("ProcessTask: %v", err)
			}
		}
		msgs := srv.Messages()
		if len(msgs) != 1 {
			t.Fatalf("server got %d messages, want 1", len(msgs))
		}
		m := msgs[0]
		if len(m.To) != 1 || m.To[0] != "grace@example.com" {
			t.Errorf("recipients %v", m.To)
		}
		for _, want := range []string{
			"Subject: Welcome to WELCOME_1, your account A-ABC00001 is ready",
			"Hello Ada,",
			"Welcome to WELCOME_1, your account A-ABC00001 is ready.",
		} {
			if !strings.Contains(m.Data, want) {
				t.Errorf("message lacks %q:\n%s", want, m.Data)
			}
		}
		if st := welcomeRowState(t, d.DB, id); st.SentAt == nil || st.Attempts != 1 {
			t.Errorf("row %+v", st)
		}
	})

	t.Run("ConcurrentDuplicatesSendOnce", func(t *testing.T) {
		h, srv := newHandler(t)
		id := testutil.WelcomeEmailRow(t, d.DB, 2, "grace2@example.com")
		var wg sync.WaitGroup
		errs := make(chan error, 5)
		for range 5 {
			wg.Go(func() { errs <- h.ProcessTask(t.Context(), welcomeTask(t, id)) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if n := len(srv.Messages()); n != 1 {
			t.Fatalf("5 concurrent runs sent %d messages, want 1", n)
		}
	})

	t.Run("TransientFailureIsRetried", func(t *testing.T) {
		h, srv := newHandler(t)
		id := testutil.WelcomeEmailRow(t, d.DB, 3, "grace3@example.com")
		srv.FailNextRcpt(451, "greylisted, try again later")
		err := h.ProcessTask(t.Context(), welcomeTask(t, id))
		if err == nil || errors.Is(err, asynq.SkipRetry) || errors.Is(err, email.ErrPermanent) {
			t.Fatalf("4xx: err = %v, want a retryable error", err)
		}
		st := welcomeRowState(t, d.DB, id)
		if st.SentAt != nil || st.Attempts != 1 || st.LastError == nil || !strings.Contains(*st.LastError, "451") {
			t.Fatalf("after a 4xx: row %+v", st)
		}
		if n := len(srv.Messages()); n != 0 {
			t.Fatalf("%d messages after a 4xx", n)
		}
		if err := h.ProcessTask(t.Context(), welcomeTask(t, id)); err != nil {
			t.Fatalf("retry: %v", err)
		}
		if n := len(srv.Messages()); n != 1 {
			t.Fatalf("%d messages after the retry, want 1", n)
		}
		if st := welcomeRowState(t, d.DB, id); st.SentAt == nil || st.Attempts != 2 || st.LastError != nil {
			t.Fatalf("after the retry: row %+v", st)
		}
	})

	t.Run("PermanentFailureSkipsRetry", func(t *testing.T) {
		h, srv := newHandler(t)
		id := testutil.WelcomeEmailRow(t, d.DB, 4, "nobody@example.com")
		srv.FailNextRcpt(550, "no such mailbox")
		err := h.ProcessTask(t.Context(), welcomeTask(t, id))
		if !errors.Is(err, asynq.SkipRetry) || !errors.Is(err, email.ErrPermanent) {
			t.Fatalf("5xx: err = %v, want SkipRetry and ErrPermanent", err)
		}
		st := welcomeRowState(t, d.DB, id)
		if st.SentAt != nil || st.Attempts != 1 || st.LastError == nil || !strings.Contains(*st.LastError, "550") {
			t.Fatalf("after a 5xx: row %+v", st)
		}
		// Given up on: the reconciler does not enqueue it again.
		ids, err := d.DB.UnsentWelcomeEmails(t.Context(), 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range ids {
			if got == id {
				t.Fatalf("UnsentWelcomeEmails lists the undeliverable e-mail %d", id)
			}
		}
	})

	t.Run("LogSenderWithoutSMTP", func(t *testing.T) {
		sender, err := email.NewSender("", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := sender.(email.LogSender); !ok {
			t.Fatalf("empty SMTP_URL gave %T, want email.LogSender", sender)
		}
		var logs bytes.Buffer
		sender = email.LogSender{Log: slog.New(slog.NewTextHandler(&logs, nil))}
		h := &jobs.WelcomeEmailHandler{Store: d.DB, Sender: sender, Log: quiet}
		id := testutil.WelcomeEmailRow(t, d.DB, 5, "grace5@example.com")
		if err := h.ProcessTask(t.Context(), welcomeTask(t, id)); err != nil {
			t.Fatalf("ProcessTask: %v", err)
		}
		if !strings.Contains(logs.String(), "grace5@example.com") {
			t.Errorf("log lacks the recipient: %s", logs.String())
		}
		if st := welcomeRowState(t, d.DB, id); st.SentAt == nil {
			t.Errorf("row not marked sent: %+v", st)
		}
	})

	t.Run("UnusableTasksSkipRetry", func(t *testing.T) {
		h, srv := newHandler(t)
		for name, task := range map[string]*asynq.Task{
			"missing row": welcomeTask(t, 1<<40),
			"bad payload": asynq.NewTask(queue.TypeWelcomeEmail, []byte("{")),
			"zero id":     asynq.NewTask(queue.TypeWelcomeEmail, []byte(`{"email_id":0}`)),
		} {
			if err := h.ProcessTask(t.Context(), task); !errors.Is(err, asynq.SkipRetry) {
				t.Errorf("%s: err = %v, want SkipRetry", name, err)
			}
		}
		if n := len(srv.Messages()); n != 0 {
			t.Fatalf("%d messages sent for unusable tasks", n)
		}
	})
}

func TestWelcomeMessage(t *testing.T) {
	base := postgres.WelcomeEmail{Email: "x@example.com", SupplierCode: "DEMO_ENERGY", PlatformAccountNumber: "A-0000ABCD"}
	for _, tc := range []struct {
		given, family, title, greeting string
	}{
		{"Ada", "Lovelace", "Dr", "Hello Ada,"},
		{"", "Lovelace", "Dr", "Dear Dr Lovelace,"},
		{"", "Lovelace", "", "Dear Lovelace,"},
		{"", "", "", "Hello,"},
	} {
		w := base
		w.GivenName, w.FamilyName, w.Title = tc.given, tc.family, tc.title
		m := jobs.WelcomeMessage(w)
		if m.To != "x@example.com" || !strings.HasPrefix(m.Text, tc.greeting+"\n") ||
			!strings.Contains(m.Text, "Welcome to DEMO_ENERGY, your account A-0000ABCD is ready.") ||
			m.Subject != "Welcome to DEMO_ENERGY, your account A-0000ABCD is ready" {
			t.Errorf("WelcomeMessage(%q,%q,%q) = %+v", tc.given, tc.family, tc.title, m)
		}
	}
}
