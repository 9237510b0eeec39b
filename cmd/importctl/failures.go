package main

import (
	"encoding/csv"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// failuresCmd lists a supplier's failure records (CONTRACT §13) across
// every organisation: read-only.
func (a *app) failuresCmd() *cobra.Command {
	var supplier, code, attr string
	var job int64
	var asCSV bool
	var limit int
	cmd := &cobra.Command{
		Use:   "failures",
		Short: "List a supplier's account failures (read-only)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			sup, err := db.SupplierByCode(cmd.Context(), supplier)
			if err != nil {
				return fmt.Errorf("failures: supplier %s: %w", supplier, err)
			}
			q := postgres.FailureQuery{SupplierID: sup.ID, Code: code, Attr: attr, JobID: job, Limit: limit}
			var rows []postgres.Failure
			if err := db.EachFailure(cmd.Context(), q, func(f postgres.Failure) error { rows = append(rows, f); return nil }); err != nil {
				return err
			}
			first := func(f postgres.Failure) (string, string) {
				if len(f.Errors) > 0 {
					return f.Errors[0].Code, f.Errors[0].Attr
				}
				return f.Code, ""
			}
			resolved := func(f postgres.Failure) string {
				if f.ResolvedAt == nil {
					return ""
				}
				return f.ResolvedAt.Format(time.RFC3339)
			}
			switch {
			case asCSV:
				w := csv.NewWriter(a.out)
				_ = w.Write([]string{"id", "external_account_number", "source", "error_code", "error_attr", "occurrences", "last_seen", "resolved_at"})
				for _, f := range rows {
					c, at := first(f)
					_ = w.Write([]string{f.ID, f.ExternalAccountNumber, f.Source, c, at, strconv.FormatInt(f.Occurrences, 10), f.LastSeen.Format(time.RFC3339), resolved(f)})
				}
				w.Flush()
				return w.Error()
			case a.asJSON:
				return a.print(rows, "")
			}
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tEXTERNAL\tSOURCE\tCODE\tATTR\tOCCURRENCES\tLAST SEEN\tRESOLVED")
			for _, f := range rows {
				c, at := first(f)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", f.ID, f.ExternalAccountNumber, f.Source, c, at, f.Occurrences, f.LastSeen.Format(time.RFC3339), resolved(f))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&supplier, "supplier", "", "supplier code (required)")
	cmd.Flags().StringVar(&code, "code", "", "only failures with a field error of this code")
	cmd.Flags().StringVar(&attr, "attr", "", "only failures with a field error at this attr")
	cmd.Flags().Int64Var(&job, "job", 0, "only failures last seen in this bulk job")
	cmd.Flags().BoolVar(&asCSV, "csv", false, "CSV output")
	cmd.Flags().IntVar(&limit, "limit", 1000, "at most this many")
	_ = cmd.MarkFlagRequired("supplier")
	return cmd
}
