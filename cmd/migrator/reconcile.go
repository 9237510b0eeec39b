package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/gridshift/dataimport/pkg/dataimport"
	sdk "github.com/gridshift/dataimport/sdk/go"
	"github.com/gridshift/dataimport/sdk/go/client"
)

// migrator reconcile (CONTRACT §14): a source export beside what landed.
// The source is read once, each account kept as its figures only (a short
// string, not the account); the landed accounts are streamed from
// GET /reconciliation/accounts/ and compared one by one.

// errDiffers ends a reconcile that found a difference (exit 2).
var errDiffers = errors.New("the source and what landed differ")

// maxListed bounds the accounts a report names per kind; the counts are exact.
const maxListed = 1000

type reconcileReport struct {
	Supplier         string                        `json:"supplier"`
	SourceAccounts   int64                         `json:"source_accounts"`
	LandedAccounts   int64                         `json:"landed_accounts"`
	Source           map[string]string             `json:"source"`
	Landed           map[string]string             `json:"landed"`
	MissingCount     int64                         `json:"missing_count"`
	Missing          []string                      `json:"missing"` // in the source, not landed
	NotInSourceCount int64                         `json:"not_in_source_count"`
	NotInSource      []string                      `json:"not_in_source"` // landed, not in the source
	DifferingCount   int64                         `json:"differing_count"`
	Differences      []dataimport.FigureDifference `json:"differences"` // "staged" is the source's figure
}

func (r *reconcileReport) differs() bool {
	return r.MissingCount+r.NotInSourceCount+r.DifferingCount > 0
}

func (c *cli) reconcileCmd() *cobra.Command {
	var supplier, source, job, since string
	asJSON := false
	cmd := &cobra.Command{
		Use:   "reconcile --supplier SUP --source FILE.ndjson",
		Short: "Compare a source export with what landed: missing and differing accounts, counts and sums (exit 2 on any difference)",
		Long: `reconcile reads a source export (NDJSON, one account per line, as push takes it) and compares each
account's counts and sums (customers, supply addresses, meter points, meters, registers, readings, agreements,
transactions by type, transfer_balance, balance, statements, payment schedules and instructions) with the same
figures read back from the platform's tables. It lists accounts missing from what landed, accounts that
landed but are not in the source, and every differing figure, and exits 0 only when nothing differs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if supplier == "" || source == "" {
				return errors.New("--supplier and --source are required")
			}
			ctx := cmd.Context()
			want, totals, n, err := readSourceFigures(source)
			if err != nil {
				return err
			}
			api, err := c.newAPI(1, 5*time.Minute, nil)
			if err != nil {
				return err
			}
			params := &client.LandedAccountsParams{ImportSupplier: client.SupplierCode(supplier)}
			if job != "" {
				params.Job = &job
			}
			if since != "" {
				t, err := time.Parse(time.RFC3339, since)
				if err != nil {
					return fmt.Errorf("--since: %w", err)
				}
				params.Since = &t
			}
			rep, err := reconcileLanded(ctx, api, params, want, totals)
			if err != nil {
				return err
			}
			rep.Supplier, rep.SourceAccounts = supplier, n
			if asJSON {
				err = json.NewEncoder(c.stdout).Encode(rep)
			} else {
				err = printReconcile(c.stdout, rep)
			}
			if err != nil {
				return err
			}
			if rep.differs() {
				return errDiffers
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&supplier, "supplier", "", "import supplier code")
	f.StringVar(&source, "source", "", "the source export, NDJSON (one account per line)")
	f.StringVar(&job, "job", "", "compare with the accounts this bulk job created only")
	f.StringVar(&since, "since", "", "compare with the accounts created at or after this time only (RFC 3339)")
	f.BoolVar(&asJSON, "json", false, "machine-readable output")
	return cmd
}

// packFigures is an account's figures in a few bytes: its non-zero
// figures as name=value, sorted.
func packFigures(f dataimport.AccountFigures) string {
	var parts []string
	for k, v := range f {
		if !v.IsZero() {
			parts = append(parts, k+"="+v.String())
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ";")
}

func unpackFigures(s string) dataimport.AccountFigures {
	f := dataimport.NewFigures()
	for _, p := range strings.Split(s, ";") {
		if k, v, ok := strings.Cut(p, "="); ok {
			f[k] = decimal.RequireFromString(v)
		}
	}
	return f
}

// readSourceFigures reads the export: external number → packed figures,
// and the totals. An account repeated later replaces the earlier one (as a
// job does).
func readSourceFigures(path string) (map[string]string, dataimport.AccountFigures, int64, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, 0, err
	}
	defer fh.Close()
	want := map[string]string{}
	rd := bufio.NewReaderSize(fh, 1<<20)
	for n := 1; ; n++ {
		line, err := rd.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var a dataimport.Account
			if uerr := json.Unmarshal(line, &a); uerr != nil || a.ExternalAccountNumber == "" {
				return nil, nil, 0, fmt.Errorf("%s line %d: not an account: %v", path, n, uerr)
			}
			want[a.ExternalAccountNumber] = packFigures(dataimport.StagedFigures(&a))
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, 0, fmt.Errorf("read %s: %w", path, err)
		}
	}
	totals := dataimport.NewFigures()
	for _, p := range want {
		totals.Add(unpackFigures(p))
	}
	return want, totals, int64(len(want)), nil
}

// reconcileLanded streams the landed accounts and compares each with the
// source; want is emptied of the accounts seen.
func reconcileLanded(ctx context.Context, api *api, params *client.LandedAccountsParams, want map[string]string, totals dataimport.AccountFigures) (*reconcileReport, error) {
	resp, err := api.LandedAccounts(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("landed accounts: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, fmt.Errorf("landed accounts: %w", sdk.NewAPIError(resp, body))
	}
	rep := &reconcileReport{Missing: []string{}, NotInSource: []string{}, Differences: []dataimport.FigureDifference{}}
	landed := dataimport.NewFigures()
	dec := json.NewDecoder(resp.Body)
	for dec.More() {
		var l struct {
			External string            `json:"external_account_number"`
			Figures  map[string]string `json:"figures"`
		}
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("landed accounts: %w", err)
		}
		got := dataimport.AccountFigures{}
		for k, v := range l.Figures {
			d, err := decimal.NewFromString(v)
			if err != nil {
				return nil, fmt.Errorf("landed accounts: %s %s: %w", l.External, k, err)
			}
			got[k] = d
		}
		rep.LandedAccounts++
		landed.Add(got)
		packed, ok := want[l.External]
		if !ok {
			rep.NotInSourceCount++
			if len(rep.NotInSource) < maxListed {
				rep.NotInSource = append(rep.NotInSource, l.External)
			}
			continue
		}
		delete(want, l.External)
		if diffs := dataimport.DiffFigures(l.External, got, unpackFigures(packed)); len(diffs) > 0 {
			rep.DifferingCount++
			for _, d := range diffs {
				if len(rep.Differences) < maxListed {
					rep.Differences = append(rep.Differences, d)
				}
			}
		}
	}
	rep.MissingCount = int64(len(want))
	for _, ext := range slices.Sorted(maps.Keys(want)) {
		if len(rep.Missing) == maxListed {
			break
		}
		rep.Missing = append(rep.Missing, ext)
	}
	rep.Source, rep.Landed = totals.Strings(), landed.Strings()
	return rep, nil
}

func printReconcile(w io.Writer, r *reconcileReport) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "supplier %s: source %d accounts, landed %d\n", r.Supplier, r.SourceAccounts, r.LandedAccounts)
	for _, k := range slices.Sorted(maps.Keys(r.Source)) {
		mark := ""
		if !decimal.RequireFromString(r.Source[k]).Equal(decimal.RequireFromString(r.Landed[k])) {
			mark = "   <- differs"
		}
		fmt.Fprintf(bw, "  %-34s source %-14s landed %s%s\n", k, r.Source[k], r.Landed[k], mark)
	}
	fmt.Fprintf(bw, "missing (in the source, not landed): %d\n", r.MissingCount)
	for _, ext := range r.Missing {
		fmt.Fprintf(bw, "  %s\n", ext)
	}
	fmt.Fprintf(bw, "landed, not in the source: %d\n", r.NotInSourceCount)
	for _, ext := range r.NotInSource {
		fmt.Fprintf(bw, "  %s\n", ext)
	}
	fmt.Fprintf(bw, "differing accounts: %d\n", r.DifferingCount)
	for _, d := range r.Differences {
		fmt.Fprintf(bw, "  %s %s: source %s, landed %s\n", d.ExternalAccountNumber, d.Field, d.Staged, d.Landed)
	}
	if !r.differs() {
		fmt.Fprintln(bw, "no differences")
	}
	return bw.Flush()
}
