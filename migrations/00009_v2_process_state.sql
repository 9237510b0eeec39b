-- +goose Up
-- v1 and v2 are two views of one import process (CONTRACT §8). The process
-- carries the v2 state; the v1 status column is kept beside it, and a CHECK
-- holds the two to the contract's mapping, so no code path can let them drift.
ALTER TABLE import_processes
    ADD COLUMN v2_status text NOT NULL DEFAULT 'PENDING'
        CHECK (v2_status IN ('PENDING', 'IN_PROGRESS', 'PROCESSED', 'ERRORED', 'CANCELLED', 'DRY_RUN_SUCCEEDED', 'DRY_RUN_ERRORED')),
    -- A v1 or v2 create scheduled it; a process only staged is PENDING unscheduled.
    ADD COLUMN scheduled boolean NOT NULL DEFAULT false,
    ADD COLUMN window_start timestamptz,
    ADD COLUMN window_end timestamptz;

UPDATE import_processes SET
    v2_status = CASE status WHEN 'COMPLETED' THEN 'PROCESSED' WHEN 'IN_PROGRESS' THEN 'IN_PROGRESS'
                            ELSE CASE WHEN latest_error IS NULL THEN 'PENDING' ELSE 'ERRORED' END END,
    scheduled = status = 'IN_PROGRESS';

ALTER TABLE import_processes
    ADD CONSTRAINT import_processes_v1_v2_status_check CHECK (
        status = CASE WHEN v2_status = 'PROCESSED' THEN 'COMPLETED'
                      WHEN v2_status = 'IN_PROGRESS' OR (v2_status = 'PENDING' AND scheduled) THEN 'IN_PROGRESS'
                      ELSE 'UNKNOWN' END),
    ADD CONSTRAINT import_processes_window_check CHECK (window_end IS NULL OR window_start IS NULL OR window_end > window_start);

-- Accounts holding a slot: counted against the cap and swept.
CREATE INDEX import_processes_started_idx ON import_processes (id) WHERE v2_status = 'IN_PROGRESS';

-- A cancelled attempt is an outcome too: a v1 request waiting on it gets its answer.
ALTER TABLE import_attempts DROP CONSTRAINT import_attempts_outcome_check,
    ADD CONSTRAINT import_attempts_outcome_check CHECK (outcome IN ('COMPLETED', 'FAILED', 'DRY_RUN', 'CANCELLED'));

-- The process's timeline, written in the same transaction as the change it
-- records: a rolled-back change leaves no event. It is the outbox partner
-- notifications are sent from.
CREATE TABLE import_process_events (
    id          bigserial PRIMARY KEY,
    process_id  bigint NOT NULL REFERENCES import_processes (id) ON DELETE CASCADE,
    event       text NOT NULL CHECK (event IN (
        'EVENT_ACCOUNT_IMPORT_PROCESS_STAGED', 'EVENT_ACCOUNT_IMPORT_PROCESS_SCHEDULED',
        'EVENT_ACCOUNT_IMPORT_PROCESS_STARTED', 'EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED',
        'EVENT_ACCOUNT_IMPORT_PROCESS_ERRORED', 'EVENT_ACCOUNT_IMPORT_PROCESS_CANCELLED',
        'EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_SUCCEEDED', 'EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_ERRORED',
        'EVENT_POST_IMPORT_COMPLETED', 'EVENT_POST_IMPORT_ERRORED')),
    data        jsonb NOT NULL DEFAULT '{}',
    occurred_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX import_process_events_process_idx ON import_process_events (process_id, id);

-- +goose Down
DROP TABLE import_process_events;
DELETE FROM import_attempts WHERE outcome = 'CANCELLED';
ALTER TABLE import_attempts DROP CONSTRAINT import_attempts_outcome_check,
    ADD CONSTRAINT import_attempts_outcome_check CHECK (outcome IN ('COMPLETED', 'FAILED', 'DRY_RUN'));
ALTER TABLE import_processes DROP CONSTRAINT import_processes_window_check,
    DROP CONSTRAINT import_processes_v1_v2_status_check,
    DROP COLUMN window_end, DROP COLUMN window_start, DROP COLUMN scheduled, DROP COLUMN v2_status;
