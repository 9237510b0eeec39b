package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	sdk "github.com/gridshift/dataimport/sdk/go"
	"github.com/gridshift/dataimport/sdk/go/client"
)

// The asynchronous API (CONTRACT §8): one create per account hands over the
// account and its schedule window and is answered at once; the account's v2
// status is then followed until it ends. Same client, retries and report as
// v1.

const apiV2Accounts = "/v2/data-import/accounts/"

// v2Window is push --v2's schedule window; a zero bound is not sent.
type v2Window struct {
	start, end time.Time
}

// parseWindow reads the --window-start/--window-end flags (RFC 3339).
func parseWindow(start, end string) (v2Window, error) {
	var w v2Window
	for _, f := range []struct {
		name, value string
		into        *time.Time
	}{{"--window-start", start, &w.start}, {"--window-end", end, &w.end}} {
		if f.value == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, f.value)
		if err != nil {
			return w, fmt.Errorf("%s: want an RFC 3339 time such as 2025-06-01T22:00:00Z: %w", f.name, err)
		}
		*f.into = t
	}
	if !w.start.IsZero() && !w.end.IsZero() && !w.end.After(w.start) {
		return w, errors.New("--window-end must be after --window-start")
	}
	return w, nil
}

func (p *pusher) runV2(ctx context.Context, a account, id string, log *slog.Logger) result {
	identified := a.supplier != "" && a.external != ""
	if identified {
		// Resume: skip what is done, follow what is scheduled or running.
		st, failure, err := p.statusV2(ctx, a)
		switch {
		case err != nil:
			return fromErr(id, err)
		case failure != nil:
			return fromAPIError(id, outcomeFailed, failure)
		case st != nil && st.Status == client.V2StatusPROCESSED:
			return p.completed(ctx, a, outcomeSkippedCompleted, deref(st.PlatformAccountNumber), "")
		case st != nil && (st.Status == client.V2StatusINPROGRESS || st.Status == client.V2StatusPENDING && st.Scheduled):
			log.InfoContext(ctx, "already scheduled, following it", "status", st.Status)
			return p.pollV2(ctx, a)
		}
	}

	params := map[string]any{"is_dry_run": p.o.dryRun}
	if !p.o.window.start.IsZero() {
		params["schedule_window_start"] = p.o.window.start.UTC().Format(time.RFC3339)
	}
	if !p.o.window.end.IsZero() {
		params["schedule_window_end"] = p.o.window.end.UTC().Format(time.RFC3339)
	}
	body, err := json.Marshal(map[string]any{"payload": json.RawMessage(a.raw), "task_params": params})
	if err != nil {
		return fromErr(id, fmt.Errorf("encode v2 create request: %w", err))
	}
	created, err := p.api.CreateAccountV2WithBodyWithResponse(ctx, nil, jsonType, bytes.NewReader(body))
	if err != nil {
		return fromErr(id, err)
	}
	e := failed(created.HTTPResponse, created.Body)
	switch {
	case created.StatusCode() == http.StatusCreated && identified:
		return p.pollV2(ctx, a)
	case created.StatusCode() == http.StatusCreated:
		// Validation requires both, so this is the file's parse, not the API.
		return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "required",
			Attr: "external_account_number", Detail: "Scheduled, but import_supplier and external_account_number are needed to follow it."}}}
	case e == nil:
		e = sdk.NewAPIError(created.HTTPResponse, created.Body) // an unexpected success
	case e.Code == "account_import_process_already_imported":
		return p.alreadyImported(ctx, a, e)
	case e.Code == "account_import_in_progress" && identified:
		return p.pollV2(ctx, a)
	}
	return fromAPIError(id, outcomeFailed, e)
}

// statusV2 is status through the v2 endpoint.
func (p *pusher) statusV2(ctx context.Context, a account) (st *client.V2AccountStatus, failure *sdk.APIError, err error) {
	r, err := p.api.AccountStatusV2WithResponse(ctx, a.supplier, a.external)
	if err != nil {
		return nil, nil, err
	}
	return found(r.HTTPResponse, r.Body, r.JSON200)
}

// pollV2 follows a scheduled account until its v2 status ends. Before the
// window opens it just waits; then it looks with the backoff of v1's poll.
// --poll-timeout counts from the window start. A graceful stop ends the
// wait (the schedule is kept by the service; a rerun follows it again).
func (p *pusher) pollV2(ctx context.Context, a account) result {
	id := a.id()
	opens := time.Now()
	if p.o.window.start.After(opens) {
		opens = p.o.window.start
	}
	deadline := opens.Add(p.o.pollTimeout)
	wait := max(time.Until(opens), 250*time.Millisecond)
	for {
		if err := sleep(ctx, p.stop, wait); err != nil {
			return fromErr(id, err)
		}
		st, failure, err := p.statusV2(ctx, a)
		switch {
		case err != nil:
			return fromErr(id, err)
		case failure != nil:
			return fromAPIError(id, outcomeFailed, failure)
		case st == nil:
			return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "not_found",
				Detail: "The status endpoint no longer knows this account."}}}
		}
		switch st.Status {
		case client.V2StatusPROCESSED:
			return p.completed(ctx, a, outcomeCompleted, deref(st.PlatformAccountNumber), "")
		case client.V2StatusDRYRUNSUCCEEDED:
			return result{outcome: outcomeDryRunOK, rows: []row{{External: id, Outcome: outcomeDryRunOK, Code: "DRY_RUN_SUCCEEDED",
				Detail: "Dry run succeeded; nothing was kept."}}}
		case client.V2StatusERRORED, client.V2StatusDRYRUNERRORED, client.V2StatusCANCELLED:
			return result{outcome: outcomeFailed, rows: []row{v2ErrorRow(id, st)}}
		}
		if time.Now().After(deadline) {
			return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "account_import_in_progress",
				Detail: fmt.Sprintf("Still %s %s after its window opened; rerun to follow it.", st.Status, p.o.pollTimeout)}}}
		}
		wait = min(wait*3/2+250*time.Millisecond, 5*time.Second)
	}
}

// v2ErrorRow reports an account that ended without one: its latest_error,
// with the v2 status and the error's domain in the detail.
func v2ErrorRow(id string, st *client.V2AccountStatus) row {
	r := row{External: id, Outcome: outcomeFailed, Code: string(st.Status), Detail: string(st.Status) + " without an error; rerun to retry."}
	if e := st.LatestError; e != nil {
		r.Code, r.Detail = e.Code, fmt.Sprintf("%s (%s, %s)", e.Detail, st.Status, e.Domain)
	}
	return r
}

// deref is a field the service reports as null until it has a value.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
