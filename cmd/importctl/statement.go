package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// statementCmd is the billing-side hook of CONTRACT §2: operators (and
// tests) move an account on to its next statement period.
func (a *app) statementCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "statement", Short: "Operator actions on an account's statements"}
	var fromFlag, toFlag string
	open := &cobra.Command{
		Use:   "open SUPPLIER EXTERNAL_NUMBER --from DATE --to DATE",
		Short: "Close the account's open statement and open the given period (one transaction)",
		Long: "Close the account's open statement and open FROM..TO (both days included) as its new open statement.\n" +
			"The new period must start after the last day of the account's statements so far.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			from, err := dataimport.ParseDate(fromFlag)
			if err != nil {
				return fmt.Errorf("--from: %w", err)
			}
			to, err := dataimport.ParseDate(toFlag)
			if err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			ch, err := db.OpenStatement(cmd.Context(), args[0], args[1], from, to)
			if err != nil {
				return err
			}
			human := fmt.Sprintf("account %s (%s/%s): opened statement %s to %s", ch.PlatformAccountNumber, args[0], args[1], from, to)
			if ch.Closed != nil {
				human += fmt.Sprintf(", closed %s to %s", ch.Closed.From, ch.Closed.To)
			}
			return a.print(map[string]any{"import_supplier": args[0], "external_account_number": args[1],
				"platform_account_number": ch.PlatformAccountNumber, "opened": ch.Opened, "closed": ch.Closed}, human)
		},
	}
	open.Flags().StringVar(&fromFlag, "from", "", "first day of the new statement (YYYY-MM-DD)")
	open.Flags().StringVar(&toFlag, "to", "", "last day of the new statement (YYYY-MM-DD)")
	_ = open.MarkFlagRequired("from")
	_ = open.MarkFlagRequired("to")
	cmd.AddCommand(open)
	return cmd
}
