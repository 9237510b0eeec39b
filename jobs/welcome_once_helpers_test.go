package jobs_test

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gridshift/dataimport/jobs"
	"github.com/gridshift/dataimport/pkg/email"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// onceClaimStale makes an interrupted attempt's claim stale quickly.
const onceClaimStale = time.Second

var onceRegistries = map[*jobs.WelcomeEmailHandler]*prometheus.Registry{}

func newOnceHandler(t *testing.T, db *postgres.DB, s email.Sender, log *slog.Logger) *jobs.WelcomeEmailHandler {
	t.Helper()
	reg := prometheus.NewRegistry()
	h := &jobs.WelcomeEmailHandler{Store: db, Sender: s, Log: log, Metrics: jobs.NewWelcomeMetrics(reg), ClaimStale: onceClaimStale}
	onceRegistries[h] = reg
	return h
}

// afterUnknown checks an e-mail left unknown after sent messages: counted,
// listed for operators, not sent by another run; then an operator resends it
// and it goes once more, with the same Message-ID.
func afterUnknown(t *testing.T, db *postgres.DB, h *jobs.WelcomeEmailHandler, srv *testutil.SMTPServer, id int64, sent int) {
	t.Helper()
	if got := welcomeOutcomes(t, onceRegistries[h])["unknown"]; got != 1 {
		t.Errorf("dataimport_welcome_emails_total{outcome=unknown} = %v, want 1", got)
	}
	unknown, err := db.UnknownWelcomeEmails(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 1 || unknown[0].ID != id || unknown[0].State != postgres.WelcomeUnknown || unknown[0].SentAt != nil {
		t.Fatalf("UnknownWelcomeEmails = %+v, want e-mail %d", unknown, id)
	}
	ids, err := db.UnsentWelcomeEmails(t.Context(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids, id) {
		t.Fatalf("the reconciler would pick up the unknown e-mail %d: %v", id, ids)
	}
	time.Sleep(2 * onceClaimStale)
	if err := h.ProcessTask(t.Context(), welcomeTask(t, id)); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Messages()); n != sent {
		t.Fatalf("%d messages after another run, want %d", n, sent)
	}

	if err := db.ResendWelcomeEmail(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if err := h.ProcessTask(t.Context(), welcomeTask(t, id)); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages()
	if len(msgs) != sent+1 {
		t.Fatalf("%d messages after the operator's resend, want %d", len(msgs), sent+1)
	}
	first, last := messageID(msgs[0].Data), messageID(msgs[len(msgs)-1].Data)
	if first == "" || first != last {
		t.Fatalf("Message-IDs %q and %q, want the same one", first, last)
	}
	if w, err := db.WelcomeEmail(t.Context(), id); err != nil || w.State != postgres.WelcomeSent || w.SentAt == nil {
		t.Fatalf("after the resend: %+v, %v", w, err)
	}
}

func messageID(data string) string {
	for _, line := range strings.Split(data, "\r\n") {
		if v, ok := strings.CutPrefix(line, "Message-ID: "); ok {
			return v
		}
	}
	return ""
}

func welcomeOutcomes(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "dataimport_welcome_emails_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}
