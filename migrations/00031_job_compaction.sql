-- +goose Up
-- Compaction of completed bulk jobs: once a job is COMPLETED, what its
-- created lines were sent as is no longer read by any answer, and was most
-- of what a job kept (the raw line and every staged version of its account,
-- each about the size of the account rows themselves). The worker drops the
-- raw text of its created, already-imported and superseded (duplicate)
-- lines, and every staged version of the accounts it created; invalid and
-- failed lines keep theirs (re-run, drill-down). Reconciliation compares
-- what landed with what was staged: before an account's staged versions
-- go, the figures of the one it was created from are kept on its process.
--
-- compacted_at: when the job's last compaction ended. A job re-run or
-- retried after it completes again later (finished_at moves), and is
-- compacted again.
ALTER TABLE import_jobs ADD COLUMN compacted_at timestamptz;
CREATE INDEX import_jobs_to_compact_idx ON import_jobs (id)
    WHERE state = 'COMPLETED' AND NOT dry_run AND (compacted_at IS NULL OR compacted_at < finished_at);

-- dataimport.AccountFigures of the staged version the account was created
-- from, figures other than 0 only ({"customers": "2", ...}); NULL while its
-- staged versions are kept.
ALTER TABLE import_processes ADD COLUMN staged_figures jsonb;
ALTER TABLE import_processes ALTER COLUMN staged_figures SET COMPRESSION lz4; -- as every TOASTable column (00016)

-- +goose Down
ALTER TABLE import_processes DROP COLUMN staged_figures;
DROP INDEX import_jobs_to_compact_idx;
ALTER TABLE import_jobs DROP COLUMN compacted_at;
