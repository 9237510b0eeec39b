// Command walkthrough is the README's walk-through with the Go SDK, typed
// calls only: validate → stage → create → status; v2 create → status →
// timeline, and a scheduled account cancelled; a bulk job uploaded with
// progress, followed to COMPLETED and its results read; the event feed
// followed; a webhook delivery verified. make test builds it as a partner
// would (its own go.mod, the SDK from a module proxy) and runs it against a
// private stack.
//
// Settings: DATAIMPORT_URL, DATAIMPORT_API_KEY, ACCOUNT_FILE (an account
// JSON), PREFIX (of the external account numbers it makes; default WALK),
// TEAM (default Migrations); WEBHOOK_SECRET and WEBHOOK_FILE (a delivery
// as {"headers": {...}, "body": "..."}) to verify a webhook.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	sdk "github.com/gridshift/dataimport/sdk/go"
	"github.com/gridshift/dataimport/sdk/go/client"
)

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	if def == "" {
		fail(fmt.Errorf("%s is not set", name))
	}
	return def
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "walkthrough:", err)
	os.Exit(1)
}

func must[T any](v T, err error) T {
	if err != nil {
		fail(err)
	}
	return v
}

func check(ok bool, what string, got any) {
	if !ok {
		fail(fmt.Errorf("%s: got %+v", what, got))
	}
}

// account is the sample account under another external number.
func account(raw []byte, external string) map[string]any {
	var a map[string]any
	if err := json.Unmarshal(raw, &a); err != nil {
		fail(err)
	}
	a["external_account_number"] = external
	return a
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	api := must(sdk.New(env("DATAIMPORT_URL", ""), env("DATAIMPORT_API_KEY", ""), sdk.Options{}))
	raw := must(os.ReadFile(env("ACCOUNT_FILE", "")))
	prefix, team := env("PREFIX", "WALK"), env("TEAM", "Migrations")
	supplier := account(raw, "")["import_supplier"].(string)
	out := map[string]any{}

	// 1–5. v1: validate, stage, create, status.
	one := account(raw, prefix+"-0001")
	validated := must(api.ValidateAccount(ctx, one))
	check(validated.ExternalAccountNumber == prefix+"-0001", "validate", validated)
	must(api.StageAccount(ctx, one))
	must(api.CreateAccount(ctx, client.CreateAccountRequest{ImportSupplierCode: supplier, ExternalAccountNumber: prefix + "-0001", OperationsTeamName: team}))
	st := must(api.WaitCreated(ctx, supplier, prefix+"-0001", 200*time.Millisecond))
	check(st.Status == "COMPLETED", "v1 status", st)
	out["v1"] = st.PlatformAccountNumber

	// 8–10. v2: create with the window open now, follow, timeline.
	now := time.Now()
	end := now.Add(time.Hour)
	acc := must(api.V2Create(ctx, account(raw, prefix+"-0002"), sdk.V2Window{Start: &now, End: &end}))
	check(acc.Status == client.V2StatusPENDING, "v2 create", acc)
	v2 := must(api.V2Wait(ctx, supplier, prefix+"-0002", 200*time.Millisecond))
	check(v2.Status == client.V2StatusPROCESSED && v2.PlatformAccountNumber != nil, "v2 status", v2)
	timeline := must(api.V2Events(ctx, supplier, prefix+"-0002"))
	check(len(timeline) >= 2, "v2 timeline", timeline)
	out["v2"] = *v2.PlatformAccountNumber

	// 11. Another, scheduled for tomorrow, cancelled while PENDING; a
	// second cancel is refused as a typed error or answers CANCELLED again.
	start, stop := now.Add(24*time.Hour), now.Add(48*time.Hour)
	must(api.V2Create(ctx, account(raw, prefix+"-0004"), sdk.V2Window{Start: &start, End: &stop}))
	cancelled := must(api.V2Cancel(ctx, supplier, prefix+"-0004"))
	check(cancelled.Status == client.V2StatusCANCELLED, "v2 cancel", cancelled)
	out["cancelled"] = string(cancelled.Status)

	// 12–14. A bulk job: three accounts and a bad line, gzipped on the fly,
	// with progress; followed to COMPLETED; its results.
	var ndjson bytes.Buffer
	for _, n := range []string{"-B001", "-B002", "-B003"} {
		if err := json.NewEncoder(&ndjson).Encode(account(raw, prefix+n)); err != nil {
			fail(err)
		}
	}
	ndjson.WriteString(`{"import_supplier":"` + supplier + `","external_account_number":"` + prefix + `-BAD"}` + "\n")
	var progressCalls int
	var sent int64
	job := must(api.UploadJob(ctx, supplier, team, bytes.NewReader(ndjson.Bytes()), sdk.JobOptions{Gzip: true,
		OnProgress: func(n, total int64) { progressCalls, sent = progressCalls+1, n }}))
	check(sent == int64(ndjson.Len()) && progressCalls > 0, "upload progress", sent)
	var states []client.JobState
	done := must(api.WaitJob(ctx, job.Id, 200*time.Millisecond, func(j *client.Job) {
		if len(states) == 0 || states[len(states)-1] != j.State {
			states = append(states, j.State)
		}
	}))
	check(done.State == client.JobStateCOMPLETED && done.Counters.Created == 3 && done.Counters.Invalid == 1, "job", done)
	outcomes := map[string]int{}
	for r, err := range api.JobResults(ctx, job.Id, "") {
		if err != nil {
			fail(err)
		}
		outcomes[r.Outcome]++
		if r.Outcome == "invalid" {
			check(len(r.Errors) > 0 && r.Errors[0].Attr != "", "invalid line's errors", r)
		}
	}
	check(outcomes["created"] == 3 && outcomes["invalid"] == 1, "results", outcomes)
	out["job"] = map[string]any{"id": job.Id, "states": states, "counters": done.Counters, "progress_calls": progressCalls}

	// 7. The event feed from its start: one complete-v1 per account
	// created (v1, v2 and the job's three), bounded by a deadline.
	feedCtx, feedStop := context.WithTimeout(ctx, 30*time.Second)
	defer feedStop()
	complete := map[string]bool{}
	for e, err := range api.Events(feedCtx, "", sdk.EventsOptions{Wait: "2s", ImportSupplier: supplier}) {
		if err != nil {
			fail(fmt.Errorf("events: %w (saw %v)", err, complete))
		}
		if e.Type == client.ImportProcessCompleteV1 {
			d, err := e.Data.AsFeedEventData() // an account's event
			if err != nil {
				fail(fmt.Errorf("event %s: %w", e.Id, err))
			}
			complete[d.ExternalAccountNumber] = true
		}
		if len(complete) == 5 {
			break
		}
	}
	out["complete_events"] = len(complete)

	// Webhooks: a delivery verified with its endpoint's secret; the same
	// body altered is refused.
	if f := os.Getenv("WEBHOOK_FILE"); f != "" {
		var d struct {
			Headers map[string]string `json:"headers"`
			Body    string            `json:"body"`
		}
		if err := json.Unmarshal(must(os.ReadFile(f)), &d); err != nil {
			fail(err)
		}
		h := http.Header{}
		for k, v := range d.Headers {
			h.Set(k, v)
		}
		secret := env("WEBHOOK_SECRET", "")
		if err := sdk.VerifyWebhook(secret, h, []byte(d.Body)); err != nil {
			fail(err)
		}
		check(sdk.VerifyWebhook(secret, h, []byte(d.Body+" ")) != nil, "tampered webhook", "verified")
		out["webhook_verified"] = true
	}

	// Errors are typed.
	_, err := api.Status(ctx, supplier, "NO-SUCH-ACCOUNT")
	var apiErr *sdk.APIError
	check(errors.As(err, &apiErr) && apiErr.StatusCode == 404 && apiErr.Code == "not_found", "typed error", err)

	out["ok"] = true
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail(err)
	}
}
