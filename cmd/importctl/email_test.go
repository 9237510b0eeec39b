package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

func TestEmailUnknownAndResend(t *testing.T) {
	d := testutil.NewDatabase(t)
	t.Setenv("DATABASE_URL", d.URL)
	ctx := t.Context()
	pending := testutil.WelcomeEmailRow(t, d.DB, 1, "pending@example.com")
	unknown := testutil.WelcomeEmailRow(t, d.DB, 2, "unknown@example.com")
	w, claimed, err := d.DB.ClaimWelcomeEmail(ctx, unknown)
	if err != nil || !claimed {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if ok, err := d.DB.FinishWelcomeEmail(ctx, unknown, w.Attempts, postgres.WelcomeUnknown, "no reply after the message"); err != nil || !ok {
		t.Fatalf("finish: %v %v", ok, err)
	}

	var list []map[string]any
	if err := json.Unmarshal([]byte(mustCtl(t, "email", "unknown", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	wantID := fmt.Sprintf("welcome-%d.A-ABC00002", unknown)
	if len(list) != 1 || list[0]["id"] != float64(unknown) || list[0]["email"] != "unknown@example.com" ||
		list[0]["message_id"] != wantID || list[0]["import_supplier"] != "WELCOME_2" || list[0]["last_error"] != "no reply after the message" {
		t.Fatalf("email unknown --json: %v", list)
	}
	if out := mustCtl(t, "email", "unknown"); !strings.Contains(out, "MESSAGE-ID") || !strings.Contains(out, wantID) {
		t.Fatalf("human list: %q", out)
	}

	for _, args := range [][]string{
		{"email", "resend", fmt.Sprint(pending)},      // not unknown: it will be sent anyway
		{"email", "resend", fmt.Sprint(unknown + 99)}, // no such e-mail
		{"email", "resend", "abc"},
		{"email", "resend"},
	} {
		if out, err := importctl(t, args...); err == nil {
			t.Errorf("importctl %s succeeded: %s", strings.Join(args, " "), out)
		}
	}
	mustCtl(t, "email", "resend", fmt.Sprint(unknown))
	if got, err := d.DB.WelcomeEmail(ctx, unknown); err != nil || got.State != postgres.WelcomePending {
		t.Fatalf("after resend: %+v %v", got, err)
	}
	if out := mustCtl(t, "email", "unknown", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("unknown after resend: %s", out)
	}
	if _, err := importctl(t, "email", "resend", fmt.Sprint(unknown)); err == nil {
		t.Fatal("second resend accepted")
	}
}
