package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
)

func (a *app) limitCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "limit", Short: "Cluster-wide cap on accounts being created at once"}
	set := &cobra.Command{
		Use:   "set N",
		Short: "Turn the limit on at N accounts in progress",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 1 {
				return fmt.Errorf("limit %q: give a whole number of at least 1", args[0])
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			if err := db.SetConcurrencyLimit(cmd.Context(), n); err != nil {
				return err
			}
			return a.print(map[string]any{"enabled": true, "limit": n}, fmt.Sprintf("concurrency limit set to %d", n))
		},
	}
	off := &cobra.Command{
		Use:   "off",
		Short: "Turn the limit off",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			if err := db.SetConcurrencyLimit(cmd.Context(), 0); err != nil {
				return err
			}
			return a.print(map[string]any{"enabled": false}, "concurrency limit off")
		},
	}
	show := &cobra.Command{
		Use:   "show",
		Short: "Show the limit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			n, on, err := db.ConcurrencyLimit(cmd.Context())
			if err != nil {
				return err
			}
			if !on {
				return a.print(map[string]any{"enabled": false}, "concurrency limit off")
			}
			return a.print(map[string]any{"enabled": true, "limit": n}, fmt.Sprintf("concurrency limit %d", n))
		},
	}
	cmd.AddCommand(set, off, show)
	return cmd
}
