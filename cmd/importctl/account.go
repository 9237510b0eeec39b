package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) accountCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "account", Short: "Operator actions on single accounts"}
	cmd.AddCommand(&cobra.Command{
		Use:   "skip SUPPLIER EXTERNAL_NUMBER",
		Short: "Mark an account so partners can neither stage nor create it",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			if err := db.MarkSkipped(cmd.Context(), args[0], args[1]); err != nil {
				return err
			}
			return a.print(map[string]string{"import_supplier": args[0], "external_account_number": args[1], "status": "skipped"},
				fmt.Sprintf("account %s/%s marked skipped", args[0], args[1]))
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "retry SUPPLIER EXTERNAL_NUMBER",
		Short: "Re-run a failed account's creation from its staged payload (through its job's failed line when it has one)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			if _, err := db.RetryAccount(cmd.Context(), args[0], args[1]); err != nil {
				return err
			}
			return a.print(map[string]string{"import_supplier": args[0], "external_account_number": args[1], "status": "retrying"},
				fmt.Sprintf("account %s/%s: creation re-run (a worker starts it under the concurrency limit)", args[0], args[1]))
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "unskip SUPPLIER EXTERNAL_NUMBER",
		Short: "Undo a skip: partners may stage and create the account again",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			if err := db.Unskip(cmd.Context(), args[0], args[1]); err != nil {
				return err
			}
			return a.print(map[string]string{"import_supplier": args[0], "external_account_number": args[1], "status": "unskipped"},
				fmt.Sprintf("account %s/%s no longer skipped", args[0], args[1]))
		},
	})
	return cmd
}
