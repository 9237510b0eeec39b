// Command loadgen drives the public HTTP API as partners would (stage →
// create → poll → post-import, with a dashboard reading status at a fixed
// rate), measures the database's own ceiling with pgbench running the same
// writes, and writes a Markdown report and a PNG chart. `make bench` runs it
// against a freshly started stack.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	var cfg runConfig
	var dbURL, outDir, listSupplier string
	var listRows, apiPID, workerPID, workerConc, pgClients, pgSeconds int
	cmd := &cobra.Command{
		Use:          "loadgen",
		Short:        "Load the data-import API and report throughput against pgbench's ceiling",
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			stopWorker := make(chan struct{})
			workerPeak := peakRSS(workerPID, stopWorker)
			checkpoint(ctx, dbURL)
			res, err := run(ctx, cfg)
			close(stopWorker)
			if err != nil {
				return err
			}
			rep := &report{When: time.Now().UTC(), Machine: machine(), Config: cfg, Run: res,
				ListRows: listRows, WorkerPeakKB: workerPeak.Load(), WorkerConc: workerConc}
			if listRows > 0 && apiPID > 0 {
				c := newClient(cfg.API, 2)
				if err := c.login(ctx, cfg.APIKey); err != nil {
					return err
				}
				if rep.ListBytes, rep.ListGrowthKB, err = listMemory(ctx, c, dbURL, listSupplier, listRows, apiPID); err != nil {
					return err
				}
			}
			if pgSeconds > 0 {
				payload := mustJSON(realisticAccount(cfg.Supplier, "PGB", 0))
				if rep.Ceiling, err = runPgbench(ctx, dbURL, cfg.Supplier, pgClients, pgSeconds, payload); err != nil {
					return err
				}
			}
			return writeReport(rep, outDir)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.API, "api", "http://127.0.0.1:8080", "API base URL")
	f.StringVar(&cfg.APIKey, "api-key", "", "partner API key")
	f.StringVar(&cfg.Supplier, "supplier", "BENCH_ENERGY", "supplier code")
	f.StringVar(&cfg.Team, "team", "Migrations", "operations team")
	f.StringVar(&cfg.Prefix, "prefix", "LG-", "external account number prefix")
	f.IntVar(&cfg.Accounts, "accounts", 2000, "accounts to migrate")
	f.IntVar(&cfg.Parallel, "parallel", 32, "concurrent partner clients")
	f.IntVar(&cfg.StatusRate, "status-rate", 200, "status reads per second during creation")
	f.BoolVar(&cfg.PostImport, "post-import", true, "add notes and transactions after creation")
	f.StringVar(&cfg.PaymentVendor, "payment-vendor", "", "give each account a payment instruction at this configured vendor (e.g. STRIPE); empty: none")
	f.StringVar(&dbURL, "database-url", os.Getenv("DATABASE_URL"), "the service's database (for pgbench and list set-up)")
	f.StringVar(&listSupplier, "list-supplier", "BENCH_LIST", "supplier for the large-list memory check")
	f.IntVar(&listRows, "list-rows", 200000, "accounts in the large-list memory check (0 skips it)")
	f.IntVar(&apiPID, "api-pid", 0, "pid of the api process (RSS sampling)")
	f.IntVar(&workerPID, "worker-pid", 0, "pid of the worker process (RSS sampling)")
	f.IntVar(&workerConc, "worker-concurrency", 0, "the worker's WORKER_CONCURRENCY, for the report")
	f.IntVar(&pgClients, "pgbench-clients", 32, "pgbench client connections")
	f.IntVar(&pgSeconds, "pgbench-seconds", 15, "pgbench duration per script (0 skips the ceiling)")
	f.StringVar(&outDir, "out", "results", "report folder")
	_ = cmd.MarkFlagRequired("api-key")
	cmd.AddCommand(webhookCmd(), scaleCmd(), scaleReportCmd())
	return cmd
}

func writeReport(rep *report, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := rep.chart(filepath.Join(dir, "latest.png")); err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	md := rep.markdown("latest.png")
	if err := os.WriteFile(filepath.Join(dir, "latest.md"), []byte(md), 0o644); err != nil {
		return err
	}
	raw, _ := json.MarshalIndent(map[string]any{"when": rep.When, "machine": rep.Machine, "run": rep.Run, "ceiling": rep.Ceiling,
		"list_rows": rep.ListRows, "list_growth_kb": rep.ListGrowthKB, "worker_peak_kb": rep.WorkerPeakKB}, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "latest.json"), raw, 0o644); err != nil {
		return err
	}
	fmt.Print(md)
	return nil
}
