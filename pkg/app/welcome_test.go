package app_test

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/testutil"
)

func TestWelcomeEmails(t *testing.T) {
	mail := testutil.NewSMTPServer(t)
	st := testutil.NewStack(t, testutil.FastPipeline, func(c *testutilConfig) { c.SMTPURL = mail.URL() })
	ctx := context.Background()
	if _, err := st.DB.CreateSupplier(ctx, dataimport.Supplier{Code: "DEMO_ENERGY", WelcomeEmail: true, PhoneRegion: "GB"}); err != nil {
		t.Fatal(err)
	}
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	must(t, firstErr(st.DB.CreateTeam(ctx, "Migrations")))
	p := &pipeline{Stack: st, token: ten.Token}
	p.StartWorker()

	// A dry run sends nothing.
	p.stage("EXT-DRY")
	if r := p.create("EXT-DRY", map[string]any{"dry_run": true}); r.JSON()["code"] != "dry_run_rolled_back" {
		t.Fatalf("dry run: %d %s", r.Status, r.Body)
	}
	p.stage("EXT-1")
	if r := p.create("EXT-1", nil); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	// A repeated create is refused and sends nothing more.
	if r := p.create("EXT-1", nil); r.Status != http.StatusBadRequest {
		t.Fatalf("second create: %d", r.Status)
	}
	want := []string{"alice.smith@example.co.uk", "bob.smith@example.co.uk"}
	deadline := time.Now().Add(15 * time.Second)
	for len(mail.Messages()) < len(want) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // room for a duplicate to show up
	var got []string
	for _, m := range mail.Messages() {
		got = append(got, m.To...)
		if !strings.Contains(m.Data, "DEMO_ENERGY") {
			t.Errorf("welcome e-mail does not name the supplier:\n%s", m.Data)
		}
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("e-mails to %v, want exactly one each to %v", got, want)
	}
	if n := p.count(`SELECT count(*) FROM welcome_emails WHERE sent_at IS NOT NULL`); n != 2 {
		t.Fatalf("%d e-mails marked sent", n)
	}
}

func firstErr[T any](_ T, err error) error { return err }
