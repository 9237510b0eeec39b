package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/gridshift/dataimport/jobs"
	"github.com/gridshift/dataimport/pkg/email"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestWelcomeEmailAtMostOnce: record-then-send with a real SMTP server and
// real Postgres. No transaction is open while the server receives the
// message; a failure to record the send (a real Postgres error) never leads
// to a second send; failures that definitely did not deliver are retried and
// deliver once; a message whose outcome is unknown is never sent again
// automatically.
func TestWelcomeEmailAtMostOnce(t *testing.T) {
	d := testutil.NewDatabase(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sender := func(t *testing.T, addr string) email.Sender {
		t.Helper()
		s, err := email.NewSender("smtp://"+addr, "Welcome <welcome@gridshift.test>")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	run := func(t *testing.T, h *jobs.WelcomeEmailHandler, id int64) error {
		t.Helper()
		return h.ProcessTask(t.Context(), welcomeTask(t, id))
	}

	t.Run("NoTransactionOpenDuringSMTP", func(t *testing.T) {
		srv := testutil.NewSMTPServer(t)
		h := newOnceHandler(t, d.DB, sender(t, srv.Addr), quiet)
		id := testutil.WelcomeEmailRow(t, d.DB, 1, "ada1@example.com")
		var mu sync.Mutex
		var open []string
		srv.OnData(func() {
			// Every client backend of this database with a transaction open,
			// other than the one asking.
			var rows []string
			err := d.DB.Gorm().Raw(`SELECT pid || ' ' || state || ': ' || left(query, 200) FROM pg_stat_activity
				WHERE datname = current_database() AND backend_type = 'client backend'
				  AND xact_start IS NOT NULL AND pid <> pg_backend_pid()`).Scan(&rows).Error
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				open = append(open, "query failed: "+err.Error())
			}
			open = append(open, rows...)
		})
		if err := run(t, h, id); err != nil {
			t.Fatal(err)
		}
		if n := len(srv.Messages()); n != 1 {
			t.Fatalf("%d messages, want 1", n)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(open) != 0 {
			t.Fatalf("transactions open while the SMTP server received the message:\n%s", strings.Join(open, "\n"))
		}
	})

	t.Run("RecordingTheSendFailsNoSecondSend", func(t *testing.T) {
		srv := testutil.NewSMTPServer(t)
		h := newOnceHandler(t, d.DB, sender(t, srv.Addr), quiet)
		id := testutil.WelcomeEmailRow(t, d.DB, 2, "ada2@example.com")
		// Postgres itself refuses to record this e-mail as sent, as a commit
		// lost after the SMTP exchange would.
		g := d.DB.Gorm()
		for _, sql := range []string{
			`CREATE FUNCTION test_refuse_sent() RETURNS trigger LANGUAGE plpgsql AS $$
			 BEGIN RAISE EXCEPTION 'test: recording the send fails'; END $$`,
			fmt.Sprintf(`CREATE TRIGGER test_refuse_sent BEFORE UPDATE ON welcome_emails FOR EACH ROW
			 WHEN (OLD.sent_at IS NULL AND NEW.sent_at IS NOT NULL AND NEW.id = %d) EXECUTE FUNCTION test_refuse_sent()`, id),
		} {
			if err := g.Exec(sql).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := run(t, h, id); err == nil || errors.Is(err, asynq.SkipRetry) {
			t.Fatalf("send not recorded: err = %v, want a retryable error", err)
		}
		if n := len(srv.Messages()); n != 1 {
			t.Fatalf("%d messages after the first attempt, want 1", n)
		}
		if err := g.Exec(`DROP TRIGGER test_refuse_sent ON welcome_emails`).Error; err != nil {
			t.Fatal(err)
		}
		// asynq retries the task (twice here): the e-mail must not go again.
		for range 2 {
			if err := run(t, h, id); err != nil {
				t.Fatalf("retry: %v", err)
			}
		}
		if n := len(srv.Messages()); n != 1 {
			t.Fatalf("%d messages after the retries, want 1 (sent twice)", n)
		}
		afterUnknown(t, d.DB, h, srv, id, 1)
	})

	t.Run("ConnectionRefusedThenDeliveredOnce", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := l.Addr().String()
		_ = l.Close()
		id := testutil.WelcomeEmailRow(t, d.DB, 3, "ada3@example.com")
		down := newOnceHandler(t, d.DB, sender(t, dead), quiet)
		err = run(t, down, id)
		if err == nil || errors.Is(err, asynq.SkipRetry) || errors.Is(err, email.ErrOutcomeUnknown) {
			t.Fatalf("connection refused: err = %v, want a retryable error", err)
		}
		if st := welcomeRowState(t, d.DB, id); st.SentAt != nil || st.Attempts != 1 || st.LastError == nil {
			t.Fatalf("after connection refused: row %+v", st)
		}
		srv := testutil.NewSMTPServer(t)
		up := newOnceHandler(t, d.DB, sender(t, srv.Addr), quiet)
		for range 2 {
			if err := run(t, up, id); err != nil {
				t.Fatalf("retry: %v", err)
			}
		}
		if n := len(srv.Messages()); n != 1 {
			t.Fatalf("%d messages, want 1", n)
		}
		if st := welcomeRowState(t, d.DB, id); st.SentAt == nil || st.Attempts != 2 || st.LastError != nil {
			t.Fatalf("after the retry: row %+v", st)
		}
	})

	t.Run("MessageRefused4xxThenDeliveredOnce", func(t *testing.T) {
		srv := testutil.NewSMTPServer(t)
		h := newOnceHandler(t, d.DB, sender(t, srv.Addr), quiet)
		id := testutil.WelcomeEmailRow(t, d.DB, 4, "ada4@example.com")
		// The server received the whole message and answered 451 to its end:
		// an explicit refusal, so nothing was delivered.
		srv.FailNextData(451, "try again later")
		err := run(t, h, id)
		if err == nil || errors.Is(err, asynq.SkipRetry) || errors.Is(err, email.ErrOutcomeUnknown) {
			t.Fatalf("451 to the message: err = %v, want a retryable error", err)
		}
		if err := run(t, h, id); err != nil {
			t.Fatalf("retry: %v", err)
		}
		msgs := srv.Messages()
		if len(msgs) != 1 {
			t.Fatalf("%d messages, want 1", len(msgs))
		}
		want := fmt.Sprintf("Message-ID: <welcome-%d.A-ABC00004@gridshift.test>", id)
		if !strings.Contains(msgs[0].Data, want) {
			t.Fatalf("message lacks %q:\n%s", want, msgs[0].Data)
		}
	})

	t.Run("MessageRefused5xxGivesUp", func(t *testing.T) {
		srv := testutil.NewSMTPServer(t)
		h := newOnceHandler(t, d.DB, sender(t, srv.Addr), quiet)
		id := testutil.WelcomeEmailRow(t, d.DB, 5, "ada5@example.com")
		srv.FailNextData(554, "message refused")
		if err := run(t, h, id); !errors.Is(err, asynq.SkipRetry) || !errors.Is(err, email.ErrPermanent) {
			t.Fatalf("554 to the message: err = %v, want SkipRetry and ErrPermanent", err)
		}
		if err := run(t, h, id); err != nil {
			t.Fatalf("duplicate after giving up: %v", err)
		}
		if n := len(srv.Messages()); n != 0 {
			t.Fatalf("%d messages, want 0", n)
		}
	})

	t.Run("RecordsAfterCancel", func(t *testing.T) {
		srv := testutil.NewSMTPServer(t)
		// The worker is told to stop right after the SMTP exchange: the
		// outcome is still recorded.
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		h := newOnceHandler(t, d.DB, cancelAfterSend{sender(t, srv.Addr), cancel}, quiet)
		id := testutil.WelcomeEmailRow(t, d.DB, 7, "ada7@example.com")
		if err := h.ProcessTask(ctx, welcomeTask(t, id)); err != nil {
			t.Fatal(err)
		}
		if st := welcomeRowState(t, d.DB, id); st.SentAt == nil {
			t.Fatalf("sent e-mail not recorded: %+v", st)
		}
	})

	t.Run("StalledAttemptDoesNotSendLate", func(t *testing.T) {
		srv := testutil.NewSMTPServer(t)
		// The attempt stalls between its claim and the SMTP exchange for
		// longer than half the stale time: it must not start sending then,
		// when others may soon take its claim for dead.
		h := newOnceHandler(t, d.DB, stallBeforeSend{sender(t, srv.Addr), onceClaimStale * 3 / 4}, quiet)
		id := testutil.WelcomeEmailRow(t, d.DB, 8, "ada8@example.com")
		err := h.ProcessTask(t.Context(), welcomeTask(t, id))
		if err == nil || errors.Is(err, asynq.SkipRetry) {
			t.Fatalf("late send: err = %v, want a retryable error", err)
		}
		if n := len(srv.Messages()); n != 0 {
			t.Fatalf("%d messages sent late", n)
		}
		if st := welcomeRowState(t, d.DB, id); st.SentAt != nil || st.Attempts != 1 {
			t.Fatalf("row %+v", st)
		}
	})

	t.Run("NoReplyToTheMessageIsUnknown", func(t *testing.T) {
		srv := testutil.NewSMTPServer(t)
		h := newOnceHandler(t, d.DB, sender(t, srv.Addr), quiet)
		id := testutil.WelcomeEmailRow(t, d.DB, 6, "ada6@example.com")
		// The server keeps the message and the connection drops before its
		// reply: the sender cannot know that it arrived.
		srv.DropNextReply()
		for range 2 {
			if err := run(t, h, id); err != nil {
				t.Fatalf("unknown outcome: err = %v, want nil (nothing to retry)", err)
			}
		}
		if n := len(srv.Messages()); n != 1 {
			t.Fatalf("%d messages, want 1 (sent again after an unknown outcome)", n)
		}
		afterUnknown(t, d.DB, h, srv, id, 1)
	})
}

// cancelAfterSend cancels the handler's context once the real sender is done.
type cancelAfterSend struct {
	email.Sender
	cancel context.CancelFunc
}

func (c cancelAfterSend) Send(ctx context.Context, m email.Message) error {
	err := c.Sender.Send(ctx, m)
	c.cancel()
	return err
}

// stallBeforeSend waits (a frozen process) before the real sender runs.
type stallBeforeSend struct {
	email.Sender
	stall time.Duration
}

func (s stallBeforeSend) Send(ctx context.Context, m email.Message) error {
	time.Sleep(s.stall)
	return s.Sender.Send(ctx, m)
}
