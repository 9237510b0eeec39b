package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"
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

// v2StatusBody is the v2 status endpoint's answer.
type v2StatusBody struct {
	Status                string   `json:"status"`
	Scheduled             bool     `json:"scheduled"`
	PlatformAccountNumber string   `json:"platform_account_number"`
	LatestError           *v2Error `json:"latest_error"`
}

type v2Error struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
	Domain string `json:"domain"`
}

func (p *pusher) runV2(ctx context.Context, a account, id string, log *slog.Logger) result {
	identified := a.supplier != "" && a.external != ""
	if identified {
		// Resume: skip what is done, follow what is scheduled or running.
		st, found, resp, err := p.statusV2(ctx, a)
		switch {
		case err != nil:
			return fromErr(id, err)
		case resp != nil:
			return fromResponse(id, outcomeFailed, resp)
		case found && st.Status == "PROCESSED":
			return p.completed(ctx, a, outcomeSkippedCompleted, st.PlatformAccountNumber, "")
		case found && (st.Status == "IN_PROGRESS" || st.Status == "PENDING" && st.Scheduled):
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
	resp, err := p.api.do(ctx, request{method: http.MethodPost, path: apiV2Accounts, body: body})
	if err != nil {
		return fromErr(id, err)
	}
	switch e := resp.apiErr(); {
	case resp.Status == http.StatusCreated && identified:
		return p.pollV2(ctx, a)
	case resp.Status == http.StatusCreated:
		// Validation requires both, so this is the file's parse, not the API.
		return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "required",
			Attr: "external_account_number", Detail: "Scheduled, but import_supplier and external_account_number are needed to follow it."}}}
	case resp.Status == http.StatusBadRequest && e.Code == "account_import_process_already_imported":
		return p.completed(ctx, a, outcomeCompleted, e.PlatformAccountNumber, "already imported")
	case resp.Status == http.StatusBadRequest && e.Code == "account_import_in_progress" && identified:
		return p.pollV2(ctx, a)
	}
	return fromResponse(id, outcomeFailed, resp)
}

func (p *pusher) statusPathV2(a account) string {
	return apiV2Accounts + url.PathEscape(a.supplier) + "/" + url.PathEscape(a.external) + "/"
}

// statusV2 is status through the v2 endpoint.
func (p *pusher) statusV2(ctx context.Context, a account) (v2StatusBody, bool, *response, error) {
	return getStatus[v2StatusBody](ctx, p, p.statusPathV2(a), a.external)
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
		if err := sleep(ctx, p.api.stopping, wait); err != nil {
			return fromErr(id, err)
		}
		st, found, resp, err := p.statusV2(ctx, a)
		switch {
		case err != nil:
			return fromErr(id, err)
		case resp != nil:
			return fromResponse(id, outcomeFailed, resp)
		case !found:
			return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "not_found",
				Detail: "The status endpoint no longer knows this account."}}}
		}
		switch st.Status {
		case "PROCESSED":
			return p.completed(ctx, a, outcomeCompleted, st.PlatformAccountNumber, "")
		case "DRY_RUN_SUCCEEDED":
			return result{outcome: outcomeDryRunOK, rows: []row{{External: id, Outcome: outcomeDryRunOK, Code: "DRY_RUN_SUCCEEDED",
				Detail: "Dry run succeeded; nothing was kept."}}}
		case "ERRORED", "DRY_RUN_ERRORED", "CANCELLED":
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
func v2ErrorRow(id string, st v2StatusBody) row {
	r := row{External: id, Outcome: outcomeFailed, Code: st.Status, Detail: st.Status + " without an error; rerun to retry."}
	if e := st.LatestError; e != nil {
		r.Code, r.Detail = e.Code, fmt.Sprintf("%s (%s, %s)", e.Detail, st.Status, e.Domain)
	}
	return r
}
