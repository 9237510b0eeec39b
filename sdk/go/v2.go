package sdk

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gridshift/dataimport/sdk/go/client"
)

// The asynchronous API (v2): one request hands over the account and its
// schedule window and is answered at once; the status is then followed.

// V2Window is when a v2 account may be created; the zero value: as soon as
// possible.
type V2Window struct {
	Start, End *time.Time
	DryRun     bool
}

// V2Create hands over an account (any value that marshals to the account
// object) to be created within the window; the answer is at once (201
// PENDING with its status URL).
func (c *Client) V2Create(ctx context.Context, account any, w V2Window) (*client.V2Accepted, error) {
	req := map[string]any{"payload": account}
	tp := map[string]any{}
	if w.Start != nil {
		tp["schedule_window_start"] = w.Start.UTC().Format(time.RFC3339)
	}
	if w.End != nil {
		tp["schedule_window_end"] = w.End.UTC().Format(time.RFC3339)
	}
	if w.DryRun {
		tp["is_dry_run"] = true
	}
	if len(tp) > 0 {
		req["task_params"] = tp
	}
	body, err := marshal(req)
	if err != nil {
		return nil, err
	}
	resp, err := c.CreateAccountV2WithBodyWithResponse(ctx, nil, jsonType, body)
	if err != nil {
		return nil, err
	}
	if err := check(resp.HTTPResponse, resp.Body); err != nil {
		return nil, err
	}
	if resp.JSON201 == nil {
		return nil, fmt.Errorf("sdk: v2 create: unexpected answer %d", resp.StatusCode())
	}
	return resp.JSON201, nil
}

// V2Status reads an account's v2 status.
func (c *Client) V2Status(ctx context.Context, supplier, external string) (*client.V2AccountStatus, error) {
	resp, err := c.AccountStatusV2WithResponse(ctx, supplier, external)
	if err != nil {
		return nil, err
	}
	if err := check(resp.HTTPResponse, resp.Body); err != nil {
		return nil, err
	}
	return resp.JSON200, nil
}

// V2Final tells whether a v2 status is final (nothing more will happen
// without a new request).
func V2Final(s client.V2Status) bool {
	return s != client.V2StatusPENDING && s != client.V2StatusINPROGRESS
}

// V2Wait polls V2Status every interval (0: one second) until the status
// is final (PROCESSED, ERRORED, CANCELLED, a dry run's outcome) or ctx
// ends. A PENDING account not scheduled (only staged) never moves: it is
// returned as it is.
func (c *Client) V2Wait(ctx context.Context, supplier, external string, interval time.Duration) (*client.V2AccountStatus, error) {
	if interval <= 0 {
		interval = time.Second
	}
	for {
		st, err := c.V2Status(ctx, supplier, external)
		if err != nil {
			return nil, err
		}
		if V2Final(st.Status) || (st.Status == client.V2StatusPENDING && !st.Scheduled) {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, context.Cause(ctx)
		case <-time.After(interval):
		}
	}
}

// V2Events is an account's whole timeline, oldest first, read page by page
// (the API pages it and links the next page in a Link header).
func (c *Client) V2Events(ctx context.Context, supplier, external string) ([]client.V2Event, error) {
	var (
		out    []client.V2Event
		params client.AccountEventsV2Params
	)
	for {
		resp, err := c.AccountEventsV2WithResponse(ctx, client.SupplierPath(supplier), external, &params)
		if err != nil {
			return nil, err
		}
		if err := check(resp.HTTPResponse, resp.Body); err != nil {
			return nil, err
		}
		if resp.JSON200 == nil {
			return nil, fmt.Errorf("sdk: v2 events: unexpected answer %d", resp.StatusCode())
		}
		out = append(out, *resp.JSON200...)
		next := nextCursor(resp.HTTPResponse.Header.Get("Link"))
		if next == "" {
			return out, nil
		}
		params.Cursor = &next
	}
}

// nextCursor is the cursor query parameter of a Link header's rel="next"
// target, or "" when there is no next page.
func nextCursor(link string) string {
	for _, part := range strings.Split(link, ",") {
		target, rel, ok := strings.Cut(part, ";")
		if !ok || !strings.Contains(rel, `rel="next"`) {
			continue
		}
		u, err := url.Parse(strings.Trim(strings.TrimSpace(target), "<>"))
		if err != nil {
			return ""
		}
		return u.Query().Get("cursor")
	}
	return ""
}

// V2Cancel cancels an account's scheduled attempt while it is PENDING;
// once started the API refuses (409 import_process_not_cancellable, as
// *APIError).
func (c *Client) V2Cancel(ctx context.Context, supplier, external string) (*client.V2Accepted, error) {
	resp, err := c.CancelAccountV2WithResponse(ctx, supplier, external, nil)
	if err != nil {
		return nil, err
	}
	if err := check(resp.HTTPResponse, resp.Body); err != nil {
		return nil, err
	}
	if resp.JSON200 == nil {
		return nil, fmt.Errorf("sdk: v2 cancel: unexpected answer %d", resp.StatusCode())
	}
	status, _ := resp.JSON200.Status.(string)
	return &client.V2Accepted{Status: client.V2Status(status), StatusUrl: resp.JSON200.StatusUrl}, nil
}
