package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/spf13/cobra"
)

func (c *cli) statusCmd() *cobra.Command {
	asJSON := false
	cmd := &cobra.Command{
		Use:   "status SUPPLIER",
		Short: "Count a supplier's accounts: imported, pending (staged, not created) and total",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api := newClient(c.apiURL, c.apiKey, c.log, 1, 2*time.Minute)
			counts := map[string]int64{}
			for _, list := range []string{"imported", "pending", "all"} {
				n, err := countList(ctx, api, list, args[0])
				if err != nil {
					return err
				}
				counts[list] = n
			}
			if asJSON {
				return json.NewEncoder(c.stdout).Encode(map[string]any{"supplier": args[0],
					"imported": counts["imported"], "pending": counts["pending"], "total": counts["all"]})
			}
			_, err := fmt.Fprintf(c.stdout, "imported %d, pending %d, total %d\n", counts["imported"], counts["pending"], counts["all"])
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	return cmd
}

// countList counts the items of one list endpoint, decoding the streamed
// array item by item (constant memory for any size). A body cut short is
// fetched again, with the same bounded backoff as other failures.
func countList(ctx context.Context, api *client, list, supplier string) (int64, error) {
	path := apiPrefix + "/" + list + "-account-import-processes/" + url.PathEscape(supplier) + "/"
	bo := api.newBackOff(ctx)
	for {
		n, err := countOnce(ctx, api, path)
		var cut *cutError
		if !errors.As(err, &cut) {
			return n, err
		}
		wait := bo.NextBackOff()
		if wait == backoff.Stop {
			return 0, fmt.Errorf("%s list: %w", list, err)
		}
		api.log.InfoContext(ctx, "list cut short, fetching again", "path", path, "err", err)
		if err := sleep(ctx, nil, wait); err != nil {
			return 0, err
		}
	}
}

// cutError is a list body that ended or broke before its closing bracket.
type cutError struct{ err error }

func (e *cutError) Error() string { return "list body cut short: " + e.err.Error() }
func (e *cutError) Unwrap() error { return e.err }

func countOnce(ctx context.Context, api *client, path string) (int64, error) {
	resp, err := api.do(ctx, request{method: http.MethodGet, path: path, stream: true})
	if err != nil {
		return 0, err
	}
	if resp.Stream == nil {
		e := resp.apiErr()
		if resp.Status == http.StatusNotFound {
			return 0, fmt.Errorf("GET %s: supplier unknown or not granted to this API key (%s)", path, e.Code)
		}
		return 0, fmt.Errorf("GET %s: HTTP %d %s: %s", path, resp.Status, e.Code, e.Detail)
	}
	defer resp.Stream.Close()
	dec := json.NewDecoder(resp.Stream)
	if tok, err := dec.Token(); err != nil {
		return 0, &cutError{err}
	} else if tok != json.Delim('[') {
		return 0, fmt.Errorf("GET %s: want a JSON array, got %v", path, tok)
	}
	var item struct {
		ExternalAccountNumber string `json:"external_account_number"`
	}
	var n int64
	for dec.More() {
		if err := dec.Decode(&item); err != nil {
			if ctx.Err() != nil {
				return 0, fmt.Errorf("GET %s: %w", path, context.Cause(ctx))
			}
			return 0, &cutError{err}
		}
		n++
	}
	if _, err := dec.Token(); err != nil {
		return 0, &cutError{err}
	}
	return n, nil
}
