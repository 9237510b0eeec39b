package main

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// jobOut is a job as importctl prints it (--json).
type jobOut struct {
	ID             int64                  `json:"id"`
	OrganisationID int64                  `json:"organisation_id"`
	ImportSupplier string                 `json:"import_supplier"`
	State          dataimport.JobState    `json:"state"`
	Create         bool                   `json:"create"`
	DryRun         bool                   `json:"dry_run"`
	Counters       dataimport.JobCounters `json:"counters"`
	Error          *dataimport.Error      `json:"error"`
	CreatedAt      time.Time              `json:"created_at"`
	FinishedAt     *time.Time             `json:"finished_at"`
	// CompactedAt: when the completed job dropped what its created lines
	// were sent as (null while it keeps them).
	CompactedAt *time.Time `json:"compacted_at"`
}

func newJobOut(v postgres.JobView) jobOut {
	j := v.Job
	return jobOut{ID: j.ID, OrganisationID: j.OrganisationID, ImportSupplier: j.SupplierCode, State: j.State, Create: j.Create, DryRun: j.DryRun,
		Counters: j.Counters, Error: j.Error, CreatedAt: j.CreatedAt.UTC(), FinishedAt: j.FinishedAt,
		CompactedAt: j.CompactedAt}
}

// jobCmd lists, shows, cancels and retries bulk jobs of every organisation
// (CONTRACT §13). cancel and retry are audited; list and show read only.
func (a *app) jobCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "job", Short: "Bulk import jobs of every organisation: list, show, cancel, retry failed creations"}
	var supplier, state string
	var limit int
	list := &cobra.Command{
		Use:   "list [--supplier CODE] [--state STATE] [--limit N]",
		Short: "List jobs, newest first (read-only)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > 10000 {
				return fmt.Errorf("--limit %d: give 1 to 10000", limit)
			}
			if state != "" && !validJobState(dataimport.JobState(state)) {
				return fmt.Errorf("--state %q: give one of %v", state, dataimport.JobStates)
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			var supID int64
			if supplier != "" {
				sup, err := db.SupplierByCode(cmd.Context(), supplier)
				if err != nil {
					return err
				}
				supID = sup.ID
			}
			views, err := db.OperatorJobs(cmd.Context(), supID, dataimport.JobState(state), limit)
			if err != nil {
				return err
			}
			out := make([]jobOut, len(views))
			for i, v := range views {
				out[i] = newJobOut(v)
			}
			if a.asJSON {
				return a.print(out, "")
			}
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tORG\tSUPPLIER\tSTATE\tRECEIVED\tCREATED\tFAILED\tINVALID\tCREATED AT")
			for _, j := range out {
				fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", j.ID, j.OrganisationID, j.ImportSupplier, j.State,
					j.Counters.Received, j.Counters.Created, j.Counters.Failed, j.Counters.Invalid, j.CreatedAt.Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&supplier, "supplier", "", "only this supplier's jobs")
	list.Flags().StringVar(&state, "state", "", "only jobs in this state")
	list.Flags().IntVar(&limit, "limit", 100, "at most this many")
	show := a.oneJobCmd("show ID", "Show one job's state and counters (read-only)", (*postgres.DB).OperatorJob)
	cancel := a.oneJobCmd("cancel ID", "Cancel a job: lines not started are cancelled, what was created stays", (*postgres.DB).OperatorCancelJob)
	var code, attr string
	retry := &cobra.Command{
		Use:   "retry ID [--code CODE] [--attr ATTR]",
		Short: "Re-run a job's failed creations (those with this field error) from their staged payloads",
		Long: "Re-run a job's failed lines whose field errors match --code and --attr (both optional) from the payloads they staged, " +
			"through the job's pipeline (cluster-wide cap, once per account, exact counters). A worker picks the job up within " +
			"RECONCILE_EVERY. Refused for a job RECEIVING, CANCELLED, FAILED, or whose schedule window ended.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := jobID(args[0])
			if err != nil {
				return err
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			r, err := db.RetryJob(cmd.Context(), 0, id, code, attr)
			if err != nil {
				return err
			}
			out := dataimport.JobRetried{Retried: r.N}
			return a.print(out, fmt.Sprintf("job %d: %s", id, out))
		},
	}
	retry.Flags().StringVar(&code, "code", "", "only lines with a field error of this code")
	retry.Flags().StringVar(&attr, "attr", "", "only lines with a field error at this attr")
	cmd.AddCommand(list, show, cancel, retry)
	return cmd
}

func validJobState(s dataimport.JobState) bool {
	for _, v := range dataimport.JobStates {
		if v == s {
			return true
		}
	}
	return false
}

// describeJob is a job's human summary.
func describeJob(j jobOut) string {
	c := j.Counters
	s := fmt.Sprintf("job %d (%s, organisation %d): %s\n  received %d: pending %d, invalid %d, duplicate_line %d, staged %d, in_progress %d, created %d, already_imported %d, failed %d, cancelled %d",
		j.ID, j.ImportSupplier, j.OrganisationID, j.State, c.Received, c.Pending, c.Invalid, c.DuplicateLine, c.Staged, c.InProgress,
		c.Created, c.AlreadyImported, c.Failed, c.Cancelled)
	if j.Error != nil {
		s += "\n  error: " + j.Error.Code + ": " + j.Error.Detail
	}
	if j.CompactedAt != nil {
		s += "\n  compacted " + j.CompactedAt.UTC().Format(time.RFC3339) + ": the text of its created lines and their accounts' staged versions are no longer kept"
	}
	return s
}

// oneJobCmd is a command on one job (ID) that prints the job act leaves.
func (a *app) oneJobCmd(use, short string, act func(*postgres.DB, context.Context, int64) (postgres.JobView, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := jobID(args[0])
			if err != nil {
				return err
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			v, err := act(db, cmd.Context(), id)
			if err != nil {
				return err
			}
			return a.print(newJobOut(v), describeJob(newJobOut(v)))
		},
	}
}

// jobID reads a job id argument.
func jobID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("job id %q: give a positive whole number", s)
	}
	return id, nil
}
