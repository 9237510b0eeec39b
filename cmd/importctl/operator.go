package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gridshift/dataimport/pkg/auth"
)

// operatorCmd manages console operators. The password it prints is
// one-time: the console makes the operator choose their own at the first
// login before anything else (must_change_password).
func (a *app) operatorCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "operator", Short: "Console operators"}
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a console operator and print a one-time password (changed at the first login)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pw, hash, err := newOneTimePassword()
			if err != nil {
				return err
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			if err := db.CreateOperator(cmd.Context(), args[0], hash); err != nil {
				return err
			}
			return a.print(map[string]any{"operator": args[0], "one_time_password": pw},
				fmt.Sprintf("operator %s created; one-time password (shown once, to be changed at the first login):\n%s", args[0], pw))
		},
	}
	reset := &cobra.Command{
		Use:   "reset-password NAME",
		Short: "Give an operator a new one-time password (ends their sessions)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pw, hash, err := newOneTimePassword()
			if err != nil {
				return err
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			if err := db.SetOperatorPassword(cmd.Context(), args[0], hash, true, nil); err != nil {
				return err
			}
			return a.print(map[string]any{"operator": args[0], "one_time_password": pw},
				fmt.Sprintf("operator %s: new one-time password (shown once, to be changed at the next login):\n%s", args[0], pw))
		},
	}
	cmd.AddCommand(create, reset)
	return cmd
}

func newOneTimePassword() (plain, hash string, err error) {
	plain, err = auth.GenerateOperatorPassword()
	if err != nil {
		return "", "", err
	}
	hash, err = auth.HashOperatorPassword(plain)
	return plain, hash, err
}
