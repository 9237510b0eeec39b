package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

func TestImportctlWebhookCommands(t *testing.T) {
	st := testutil.NewStack(t)
	t.Setenv("DATABASE_URL", st.Config.DatabaseURL)
	if _, err := st.DB.CreateOrganisation(context.Background(), "Hooked"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WEBHOOK_ALLOW_PRIVATE", "false")
	for _, url := range []string{"https://127.0.0.1/h", "https://10.0.0.8/h", "http://8.8.8.8/h"} {
		if out, err := importctl(t, "webhook", "add", "--org", "Hooked", "--url", url); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("add %s: %v %s", url, err, out)
		}
	}
	if _, err := importctl(t, "webhook", "add", "--org", "Nobody", "--url", "https://8.8.8.8/h"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("unknown organisation: %v", err)
	}
	if _, err := importctl(t, "webhook", "add", "--org", "Hooked", "--url", "https://8.8.8.8/h", "--events", "import_process.nope-v1"); err == nil {
		t.Error("unknown event type accepted")
	}
	var added struct {
		ID     int64  `json:"id"`
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal([]byte(mustCtl(t, "webhook", "add", "--org", "Hooked", "--url", "https://8.8.8.8/h",
		"--events", "import_process.complete-v1, import_process.error-v1", "--json")), &added); err != nil || !strings.HasPrefix(added.Secret, "whsec_") {
		t.Fatalf("add: %+v %v", added, err)
	}
	id := jsonID(added.ID)
	list := func() map[string]any {
		var es []map[string]any
		if err := json.Unmarshal([]byte(mustCtl(t, "webhook", "list", "--org", "Hooked", "--json")), &es); err != nil || len(es) != 1 {
			t.Fatalf("list: %v %v", es, err)
		}
		if _, leaked := es[0]["secret"]; leaked {
			t.Fatal("list shows the secret")
		}
		return es[0]
	}
	if e := list(); e["enabled"] != true || len(e["event_types"].([]any)) != 2 {
		t.Errorf("listed %v", e)
	}
	mustCtl(t, "webhook", "disable", id)
	if e := list(); e["enabled"] != false || e["disabled_reason"] != "disabled by an operator" {
		t.Errorf("after disable: %v", e)
	}
	mustCtl(t, "webhook", "enable", id)
	if e := list(); e["enabled"] != true || e["disabled_reason"] != nil {
		t.Errorf("after enable: %v", e)
	}
	var rotated struct{ Secret string }
	if err := json.Unmarshal([]byte(mustCtl(t, "webhook", "rotate-secret", id, "--json")), &rotated); err != nil ||
		rotated.Secret == added.Secret || !strings.HasPrefix(rotated.Secret, "whsec_") {
		t.Errorf("rotate: %+v %v", rotated, err)
	}
	e, err := st.DB.WebhookEndpoint(context.Background(), added.ID)
	if err != nil || e.Secret != rotated.Secret {
		t.Errorf("stored secret is not the rotated one: %v", err)
	}
	for _, args := range [][]string{{"disable", "0"}, {"enable", "x"}, {"rotate-secret", "99999"}, {"log", id, "--limit", "0"}} {
		if _, err := importctl(t, append([]string{"webhook"}, args...)...); err == nil {
			t.Errorf("webhook %v accepted", args)
		}
	}
}

func jsonID(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
