package main

import (
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// unknownEmailJSON is one welcome e-mail whose outcome is unknown.
type unknownEmailJSON struct {
	ID                    int64      `json:"id"`
	Supplier              string     `json:"import_supplier"`
	PlatformAccountNumber string     `json:"platform_account_number"`
	Email                 string     `json:"email"`
	MessageID             string     `json:"message_id"`
	ClaimedAt             *time.Time `json:"claimed_at"`
	Attempts              int        `json:"attempts"`
	LastError             string     `json:"last_error"`
}

// emailCmd is the operator's side of "welcome e-mails at most once": an
// e-mail whose sending was interrupted after it was claimed is never sent
// again automatically; operators list them and resend the ones that did not
// arrive (the relay's logs, searched by Message-ID, tell).
func (a *app) emailCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "email", Short: "Welcome e-mails whose delivery is unknown"}
	cmd.AddCommand(&cobra.Command{
		Use:   "unknown",
		Short: "List welcome e-mails that may or may not have been sent (never retried automatically)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			ws, err := db.UnknownWelcomeEmails(cmd.Context())
			if err != nil {
				return err
			}
			out := make([]unknownEmailJSON, len(ws))
			for i, w := range ws {
				out[i] = unknownEmailJSON{ID: w.ID, Supplier: w.SupplierCode, PlatformAccountNumber: w.PlatformAccountNumber,
					Email: w.Email, MessageID: w.MessageID, ClaimedAt: w.ClaimedAt, Attempts: w.Attempts}
				if w.LastError != nil {
					out[i].LastError = *w.LastError
				}
			}
			if a.asJSON {
				return a.print(out, "")
			}
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSUPPLIER\tACCOUNT\tEMAIL\tMESSAGE-ID\tCLAIMED AT\tLAST ERROR")
			for _, e := range out {
				claimed := ""
				if e.ClaimedAt != nil {
					claimed = e.ClaimedAt.UTC().Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Supplier, e.PlatformAccountNumber, e.Email, e.MessageID, claimed, e.LastError)
			}
			return tw.Flush()
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "resend ID",
		Short: "Send an unknown welcome e-mail again (same Message-ID); a worker sends it within a reconcile pass",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id <= 0 {
				return fmt.Errorf("ID must be a welcome e-mail id from `importctl email unknown`, got %q", args[0])
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			if err := db.ResendWelcomeEmail(cmd.Context(), id); err != nil {
				return err
			}
			return a.print(map[string]any{"id": id, "state": "pending"},
				fmt.Sprintf("welcome e-mail %d queued again; a worker sends it within RECONCILE_EVERY", id))
		},
	})
	return cmd
}
