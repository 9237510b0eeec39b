-- +goose Up
-- A per-account creation task may take along other started per-account
-- attempts whose own tasks are still queued, so they share its
-- transaction (jobs/companions.go): at the default of two tasks a core,
-- concurrent tasks alone make batches of about two accounts. It must never
-- take a bulk job's attempt, which is created only by the job's own rounds
-- under the job's guard (cancel waits for them), so each attempt records
-- who began it: job_attempt is true from BeginJobAttempts, false from every
-- other start (v1 create, v2 schedule, retry).
ALTER TABLE import_processes ADD COLUMN job_attempt boolean NOT NULL DEFAULT false;

-- Attempts begun by a job before this migration, still to be created.
UPDATE import_processes p SET job_attempt = true
  FROM import_job_records r
 WHERE r.outcome = 'in_progress' AND r.process_id = p.id AND p.status = 'IN_PROGRESS';

-- The started per-account attempts not yet created, newest first (see
-- AwaitingCreation): only rows in that state are in it, a few at a time.
CREATE INDEX import_processes_awaiting_idx ON import_processes (modified_at)
 WHERE v2_status = 'IN_PROGRESS' AND NOT job_attempt AND NOT dry_run;

-- +goose Down
DROP INDEX import_processes_awaiting_idx;
ALTER TABLE import_processes DROP COLUMN job_attempt;
