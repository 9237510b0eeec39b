package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gridshift/dataimport/pkg/auth"
	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

func (a *app) teamCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "team", Short: "Manage operations teams"}
	cmd.AddCommand(&cobra.Command{
		Use:   "create NAME",
		Short: "Create an operations team",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := strings.TrimSpace(args[0])
			if name == "" {
				return fmt.Errorf("team name may not be blank")
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			t, err := db.CreateTeam(cmd.Context(), name)
			if err != nil {
				return err
			}
			return a.print(map[string]any{"name": t.Name}, fmt.Sprintf("team %q created", t.Name))
		},
	})
	return cmd
}

func (a *app) orgCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "org", Short: "Manage organisations (tenants)"}
	cmd.AddCommand(&cobra.Command{
		Use:   "create NAME",
		Short: "Create an organisation",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := strings.TrimSpace(args[0])
			if name == "" {
				return fmt.Errorf("organisation name may not be blank")
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			o, err := db.CreateOrganisation(cmd.Context(), name)
			if err != nil {
				return err
			}
			return a.print(map[string]any{"name": o.Name}, fmt.Sprintf("organisation %q created", o.Name))
		},
	})
	return cmd
}

func (a *app) apikeyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "apikey", Short: "Issue and revoke API keys"}
	var org string
	var suppliers, scopes []string
	create := &cobra.Command{
		Use:   "create --org NAME --supplier CODE [--supplier CODE ...] [--scope products]",
		Short: "Grant suppliers to an organisation and issue a key (printed once)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range scopes {
				if !slices.Contains(dataimport.Scopes, s) {
					return fmt.Errorf("--scope %q: use one of %v", s, dataimport.Scopes)
				}
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			k, err := auth.GenerateAPIKey()
			if err != nil {
				return err
			}
			if err := db.CreateAPIKey(cmd.Context(), postgres.NewAPIKey{Organisation: org, Suppliers: suppliers, Prefix: k.Prefix, Hash: k.Hash, Scopes: scopes}); err != nil {
				return err
			}
			return a.print(map[string]any{"api_key": k.Plain, "prefix": k.Prefix, "organisation": org, "suppliers": suppliers, "scopes": scopes},
				fmt.Sprintf("%s\n(shown once; store it safely. Revoke with: importctl apikey revoke %s)", k.Plain, k.Prefix))
		},
	}
	create.Flags().StringVar(&org, "org", "", "organisation name")
	create.Flags().StringArrayVar(&suppliers, "supplier", nil, "supplier code the organisation may act for (repeatable)")
	create.Flags().StringSliceVar(&scopes, "scope", nil, "extra permission of the key: products (write the product catalogue); repeatable or comma-separated")
	_ = create.MarkFlagRequired("org")
	_ = create.MarkFlagRequired("supplier")

	revoke := &cobra.Command{
		Use:   "revoke KEY_PREFIX",
		Short: "Revoke a key; tokens issued from it stop working at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			if err := db.RevokeAPIKey(cmd.Context(), args[0]); err != nil {
				return err
			}
			return a.print(map[string]string{"prefix": args[0], "status": "revoked"}, fmt.Sprintf("api key %s revoked", args[0]))
		},
	}
	cmd.AddCommand(create, revoke)
	return cmd
}
