// Command importctl is the operator CLI: suppliers, teams, organisations, API
// keys, the concurrency limit, skips and migrations (CONTRACT §2).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gridshift/dataimport/pkg/config"
	"github.com/gridshift/dataimport/pkg/postgres"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// app is shared by every subcommand: configuration, output mode and a lazily
// opened database.
type app struct {
	asJSON bool
	actor  string
	out    io.Writer
	db     *postgres.DB
}

func newRoot() *cobra.Command {
	a := &app{}
	root := &cobra.Command{
		Use:           "importctl",
		Short:         "Operate the data-import service",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Every change a command makes is audited in its own transaction
		// under this actor (postgres.WithActor, audit.go).
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			actor, err := commandActor(a.actor)
			if err != nil {
				return err
			}
			cmd.SetContext(postgres.WithActor(cmd.Context(), actor))
			return nil
		},
		PersistentPostRun: func(*cobra.Command, []string) {
			if a.db != nil {
				_ = a.db.Close()
			}
		},
	}
	root.PersistentFlags().BoolVar(&a.asJSON, "json", false, "machine-readable JSON output")
	root.PersistentFlags().StringVar(&a.actor, "actor", "", "who is acting, for the audit log (default importctl:<OS user>)")
	root.AddCommand(a.migrateCmd(), a.supplierCmd(), a.teamCmd(), a.orgCmd(), a.apikeyCmd(), a.limitCmd(), a.accountCmd(), a.statementCmd(), a.emailCmd(),
		a.operatorCmd(), a.auditCmd(), a.webhookCmd(), a.productsCmd(), a.failuresCmd(), a.jobCmd())
	return root
}

// open connects to DATABASE_URL on first use.
func (a *app) open(cmd *cobra.Command) (*postgres.DB, error) {
	a.out = cmd.OutOrStdout()
	if a.db != nil {
		return a.db, nil
	}
	cfg, err := config.Load()
	if err != nil {
		return nil, err
	}
	db, err := postgres.Open(cmd.Context(), cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	a.db = db
	return db, nil
}

// print writes v as JSON with --json, else the human text.
func (a *app) print(v any, human string) error {
	if a.asJSON {
		enc := json.NewEncoder(a.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	_, err := fmt.Fprintln(a.out, human)
	return err
}

func (a *app) migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply database migrations (idempotent)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			if err := db.Migrate(cmd.Context()); err != nil {
				return err
			}
			return a.print(map[string]string{"status": "migrated"}, "migrations applied")
		},
	}
}
