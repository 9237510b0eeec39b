package sdk

import (
	"context"
	"iter"

	"github.com/gridshift/dataimport/sdk/go/client"
)

// EventsOptions narrow the feed; the zero value is every event of every
// supplier the organisation may see.
type EventsOptions struct {
	Types          []client.FeedEventType
	ImportSupplier string
	// Limit is the page size (1 to 1000; 0: the API's 100).
	Limit int
	// Wait is the long-poll of an empty page (e.g. "20s", at most "30s");
	// empty: "20s".
	Wait string
	// Cursor, when set, is called with each page's next cursor after its
	// events were yielded: save it to resume after a restart.
	Cursor func(next string)
}

// Events follows the organisation's event feed from the cursor after
// (""; the start of the feed; "latest": from now on), page by page with
// long polls, yielding each event once, in commit order, until ctx ends or
// the caller stops. It ends with ctx's error, or the API's error.
func (c *Client) Events(ctx context.Context, after string, opts EventsOptions) iter.Seq2[client.FeedEvent, error] {
	return func(yield func(client.FeedEvent, error) bool) {
		wait := opts.Wait
		if wait == "" {
			wait = "20s"
		}
		for {
			params := &client.EventFeedParams{Wait: &wait}
			if after != "" {
				a := after
				params.After = &a
			}
			if opts.Limit > 0 {
				params.Limit = &opts.Limit
			}
			if len(opts.Types) > 0 {
				params.Type = &opts.Types
			}
			if opts.ImportSupplier != "" {
				params.ImportSupplier = &opts.ImportSupplier
			}
			resp, err := c.EventFeedWithResponse(ctx, params)
			if err == nil {
				err = check(resp.HTTPResponse, resp.Body)
			}
			if err == nil && resp.JSON200 == nil {
				err = NewAPIError(resp.HTTPResponse, resp.Body)
			}
			if err != nil {
				if ctx.Err() != nil {
					err = context.Cause(ctx)
				}
				yield(client.FeedEvent{}, err)
				return
			}
			for _, e := range resp.JSON200.Events {
				if !yield(e, nil) {
					return
				}
			}
			after = resp.JSON200.Next
			if opts.Cursor != nil {
				opts.Cursor(after)
			}
			if ctx.Err() != nil {
				yield(client.FeedEvent{}, context.Cause(ctx))
				return
			}
		}
	}
}
