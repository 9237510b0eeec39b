-- +goose Up
-- Bulk import jobs (CONTRACT §11): one NDJSON upload of many accounts for
-- one supplier of one organisation, staged and created through the same
-- import processes as the per-account endpoints. The job, its counters and
-- every line's outcome live here; Redis only carries the wake-up task.
--
-- No CHECK constraints and no bounded types: nothing here is partner input
-- Postgres would refuse (states and outcomes are written by the service).
CREATE TABLE import_jobs (
    id                   bigserial PRIMARY KEY,
    organisation_id      bigint NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    supplier_id          bigint NOT NULL REFERENCES import_suppliers (id),
    operations_team_id   bigint REFERENCES operations_teams (id),
    state                text NOT NULL DEFAULT 'RECEIVING',
    create_accounts      boolean NOT NULL DEFAULT true,
    dry_run              boolean NOT NULL DEFAULT false,
    -- An optional v2-style schedule window: lines are staged at once, their
    -- accounts created only inside it; lines not started by its end fail.
    window_start         timestamptz,
    window_end           timestamptz,
    idempotency_key      text,
    request_query        text NOT NULL DEFAULT '',
    body_bytes           bigint NOT NULL DEFAULT 0,
    -- SHA-256 of the received NDJSON (after gzip): a retry with the same
    -- Idempotency-Key and another body is refused, not replayed.
    body_sha256          bytea,
    error                jsonb,
    -- Counters: every line is in exactly one outcome, so these add up to
    -- n_received once the body is in. Each is changed in the statement that
    -- moves the lines, so none is ever counted twice.
    n_received           bigint NOT NULL DEFAULT 0,
    n_pending            bigint NOT NULL DEFAULT 0,
    n_invalid            bigint NOT NULL DEFAULT 0,
    n_duplicate_line     bigint NOT NULL DEFAULT 0,
    n_staged             bigint NOT NULL DEFAULT 0,
    n_in_progress        bigint NOT NULL DEFAULT 0,
    n_created            bigint NOT NULL DEFAULT 0,
    n_already_imported   bigint NOT NULL DEFAULT 0,
    n_failed             bigint NOT NULL DEFAULT 0,
    n_cancelled          bigint NOT NULL DEFAULT 0,
    -- The worker running the job holds it until lease_until; a job whose
    -- lease ran out is taken over (worker SIGKILL, Redis loss).
    lease_owner          text,
    lease_until          timestamptz,
    lease_epoch          integer NOT NULL DEFAULT 0, -- names the wake-up task: bumped when a lease is given up or lost
    -- (unix seconds, lines done) samples of the last minute, for accounts/s and the ETA.
    rate_samples         jsonb NOT NULL DEFAULT '[]',
    -- The receiving request's heartbeat: a RECEIVING job whose heartbeat
    -- stopped lost its upload (API SIGKILL) and may be taken over by a retry.
    heartbeat_at         timestamptz NOT NULL DEFAULT now(),
    created_at           timestamptz NOT NULL DEFAULT now(),
    received_at          timestamptz,
    finished_at          timestamptz,
    modified_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX import_jobs_org_idx ON import_jobs (organisation_id, id);
CREATE INDEX import_jobs_unfinished_idx ON import_jobs (id) WHERE state IN ('RECEIVING', 'PROCESSING');
CREATE UNIQUE INDEX import_jobs_idempotency_idx ON import_jobs (organisation_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- One row per line of the body. outcome is one of pending (valid, not yet
-- staged), invalid, duplicate_line, staged, in_progress, created,
-- already_imported, failed, cancelled.
CREATE TABLE import_job_records (
    job_id                  bigint NOT NULL REFERENCES import_jobs (id) ON DELETE CASCADE,
    line                    bigint NOT NULL, -- blank lines count too: a 2 GiB body may have more than 2^31
    external_account_number text,
    payload                 text,
    outcome                 text NOT NULL,
    errors                  jsonb,
    process_id              bigint,
    staged_version          integer,
    attempt                 integer,
    platform_account_number text,
    modified_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, line)
);
-- The worker's queues: lines still to stage, lines to create, lines being created.
CREATE INDEX import_job_records_todo_idx ON import_job_records (job_id, line) WHERE outcome IN ('pending', 'staged', 'in_progress') OR (outcome = 'duplicate_line' AND staged_version IS NULL);
CREATE INDEX import_job_records_external_idx ON import_job_records (job_id, external_account_number);
-- Lines being created, read every round (in flight after a crash, outcomes
-- to settle, cancel) with no cursor: their own index, so those reads cost
-- the lines in flight, not every line still to do.
CREATE INDEX import_job_records_in_progress_idx ON import_job_records (job_id, line) WHERE outcome = 'in_progress';
-- Staged lines waiting for creation, read after a cursor in line order: on
-- the todo index the planner filters every line still to do (280 ms at
-- 200,000 lines; 0.1 ms on this one).
CREATE INDEX import_job_records_to_start_idx ON import_job_records (job_id, line) WHERE outcome = 'staged' AND attempt IS NULL;

-- +goose Down
DROP TABLE import_job_records;
DROP TABLE import_jobs;
