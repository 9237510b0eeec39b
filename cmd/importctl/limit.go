package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// capFlags are the --supplier / --org choice of limit set and limit off:
// neither is the cluster-wide cap.
type capFlags struct{ supplier, org string }

func (f *capFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.supplier, "supplier", "", "cap only this supplier's accounts (code), inside the cluster-wide cap")
	cmd.Flags().StringVar(&f.org, "org", "", "cap only this organisation's accounts (name), inside the cluster-wide cap")
	cmd.MarkFlagsMutuallyExclusive("supplier", "org")
}

// scope is what the flags name: ok is false for the cluster-wide cap.
func (f *capFlags) scope() (scope postgres.CapScope, name, label string, ok bool) {
	switch {
	case f.supplier != "":
		return postgres.CapSupplier, f.supplier, "supplier " + f.supplier, true
	case f.org != "":
		return postgres.CapOrganisation, f.org, "organisation " + f.org, true
	}
	return "", "", "", false
}

func (a *app) limitCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "limit", Short: "Caps on accounts being created at once: cluster-wide, per supplier, per organisation"}
	var setFlags, offFlags capFlags
	set := &cobra.Command{
		Use:   "set [--supplier SUP | --org ORG] N",
		Short: "Turn the cluster-wide cap on at N accounts in progress, or cap one supplier or organisation at N inside it",
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
			if scope, name, label, ok := setFlags.scope(); ok {
				if err := db.SetConcurrencyCap(cmd.Context(), scope, name, n); err != nil {
					return err
				}
				return a.print(map[string]any{"scope": scope, "name": name, "enabled": true, "limit": n},
					fmt.Sprintf("concurrency limit of %s set to %d", label, n))
			}
			if err := db.SetConcurrencyLimit(cmd.Context(), n); err != nil {
				return err
			}
			return a.print(map[string]any{"enabled": true, "limit": n}, fmt.Sprintf("concurrency limit set to %d", n))
		},
	}
	setFlags.add(set)
	off := &cobra.Command{
		Use:   "off [--supplier SUP | --org ORG]",
		Short: "Turn the cluster-wide cap off, or remove one supplier's or organisation's cap",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			if scope, name, label, ok := offFlags.scope(); ok {
				if err := db.SetConcurrencyCap(cmd.Context(), scope, name, 0); err != nil {
					return err
				}
				return a.print(map[string]any{"scope": scope, "name": name, "enabled": false}, "concurrency limit of "+label+" off")
			}
			if err := db.SetConcurrencyLimit(cmd.Context(), 0); err != nil {
				return err
			}
			return a.print(map[string]any{"enabled": false}, "concurrency limit off")
		},
	}
	offFlags.add(off)
	show := &cobra.Command{
		Use:   "show",
		Short: "Show the cluster-wide cap and every supplier's and organisation's cap",
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
			caps, err := db.NamedConcurrencyCaps(cmd.Context())
			if err != nil {
				return err
			}
			text := "concurrency limit off"
			out := map[string]any{"enabled": false, "caps": caps}
			if on {
				text = fmt.Sprintf("concurrency limit %d", n)
				out = map[string]any{"enabled": true, "limit": n, "caps": caps}
			}
			for _, c := range caps {
				text += fmt.Sprintf("\n  %s %s: %d", c.Scope, c.Name, c.Cap)
			}
			return a.print(out, text)
		},
	}
	cmd.AddCommand(set, off, show)
	return cmd
}
