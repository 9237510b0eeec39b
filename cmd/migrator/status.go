package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	sdk "github.com/gridshift/dataimport/sdk/go"
)

func (c *cli) statusCmd() *cobra.Command {
	asJSON := false
	cmd := &cobra.Command{
		Use:   "status SUPPLIER",
		Short: "Count a supplier's accounts: imported, pending (staged, not created) and total",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, err := c.newAPI(1, 2*time.Minute, nil)
			if err != nil {
				return err
			}
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
			_, err = fmt.Fprintf(c.stdout, "imported %d, pending %d, total %d\n", counts["imported"], counts["pending"], counts["all"])
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	return cmd
}

// lists are the list endpoints, streamed (the raw client: the typed one
// would hold a whole list in memory), through the SDK's auth and retries.
var lists = map[string]func(ctx context.Context, api *api, supplier string) (*http.Response, error){
	"imported": func(ctx context.Context, api *api, supplier string) (*http.Response, error) {
		return api.ListImportedAccountImportProcesses(ctx, supplier, nil)
	},
	"pending": func(ctx context.Context, api *api, supplier string) (*http.Response, error) {
		return api.ListPendingAccountImportProcesses(ctx, supplier, nil)
	},
	"all": func(ctx context.Context, api *api, supplier string) (*http.Response, error) {
		return api.ListAllAccountImportProcesses(ctx, supplier, nil)
	},
}

// listReads bounds the reads of a list whose body is cut short (each read
// is one request, retried by the SDK like any other).
const listReads = 3

// countList counts the items of one list endpoint, decoding the streamed
// array item by item (constant memory for any size). A body cut short is
// read again from the start.
func countList(ctx context.Context, api *api, list, supplier string) (int64, error) {
	for read := 1; ; read++ {
		n, err := countOnce(ctx, api, list, supplier)
		var cut *cutError
		if !errors.As(err, &cut) || read == listReads || ctx.Err() != nil {
			return n, err
		}
		api.log.InfoContext(ctx, "list cut short, reading it again", "list", list, "err", err)
	}
}

// cutError is a list body that ended or broke before its closing bracket.
type cutError struct{ err error }

func (e *cutError) Error() string { return "list body cut short: " + e.err.Error() }
func (e *cutError) Unwrap() error { return e.err }

func countOnce(ctx context.Context, api *api, list, supplier string) (int64, error) {
	resp, err := lists[list](ctx, api, supplier)
	if err != nil {
		return 0, fmt.Errorf("%s list: %w", list, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		e := sdk.NewAPIError(resp, body)
		if resp.StatusCode == http.StatusNotFound {
			return 0, fmt.Errorf("%s list: supplier unknown or not granted to this API key (%s)", list, e.Code)
		}
		return 0, fmt.Errorf("%s list: %w", list, e)
	}
	dec := json.NewDecoder(resp.Body)
	if tok, err := dec.Token(); err != nil {
		return 0, fmt.Errorf("%s list: %w", list, &cutError{err})
	} else if tok != json.Delim('[') {
		return 0, fmt.Errorf("%s list: want a JSON array, got %v", list, tok)
	}
	var item json.RawMessage
	var n int64
	for dec.More() {
		if err := dec.Decode(&item); err != nil {
			return 0, fmt.Errorf("%s list: %w", list, &cutError{err})
		}
		n++
	}
	if _, err := dec.Token(); err != nil {
		return 0, fmt.Errorf("%s list: %w", list, &cutError{err})
	}
	return n, nil
}
