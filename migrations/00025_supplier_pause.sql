-- +goose Up
-- CONTRACT §14: a pause that holds, and the error-rate brake.
--
-- The brake, optional per supplier: when more than brake_failure_bp basis
-- points (1/100 of a percent: 5% is 500) of the supplier's last
-- brake_window creation outcomes failed, the supplier is paused by
-- `system`. Both are set or neither.
--
-- pause_reason says why the supplier is Paused (who paused it; for the
-- brake the measured rate and the top failure codes), for the console and
-- operators; NULL when it is not paused.
ALTER TABLE import_suppliers
    ADD COLUMN brake_failure_bp integer CHECK (brake_failure_bp BETWEEN 1 AND 9999),
    ADD COLUMN brake_window integer CHECK (brake_window BETWEEN 10 AND 100000),
    ADD COLUMN pause_reason jsonb,
    ADD CONSTRAINT import_suppliers_brake_check CHECK ((brake_failure_bp IS NULL) = (brake_window IS NULL));
ALTER TABLE import_suppliers ALTER COLUMN pause_reason SET COMPRESSION lz4;

-- A creation held while its supplier is Paused says so in its timeline.
-- The list is the whole vocabulary, including the partner events of
-- migration 00022 (a job's end, a supplier paused by the brake).
ALTER TABLE import_process_events
    DROP CONSTRAINT import_process_events_event_check,
    ADD CONSTRAINT import_process_events_event_check CHECK (event IN (
        'EVENT_ACCOUNT_IMPORT_PROCESS_STAGED', 'EVENT_ACCOUNT_IMPORT_PROCESS_SCHEDULED',
        'EVENT_ACCOUNT_IMPORT_PROCESS_STARTED', 'EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED',
        'EVENT_ACCOUNT_IMPORT_PROCESS_ERRORED', 'EVENT_ACCOUNT_IMPORT_PROCESS_CANCELLED',
        'EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_SUCCEEDED', 'EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_ERRORED',
        'EVENT_POST_IMPORT_COMPLETED', 'EVENT_POST_IMPORT_ERRORED',
        'JOB_COMPLETED', 'JOB_FAILED', 'JOB_CANCELLED', 'SUPPLIER_PAUSED',
        'EVENT_ACCOUNT_IMPORT_PROCESS_HELD'));

-- +goose Down
DELETE FROM import_process_events WHERE event = 'EVENT_ACCOUNT_IMPORT_PROCESS_HELD';
ALTER TABLE import_process_events
    DROP CONSTRAINT import_process_events_event_check,
    ADD CONSTRAINT import_process_events_event_check CHECK (event IN (
        'EVENT_ACCOUNT_IMPORT_PROCESS_STAGED', 'EVENT_ACCOUNT_IMPORT_PROCESS_SCHEDULED',
        'EVENT_ACCOUNT_IMPORT_PROCESS_STARTED', 'EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED',
        'EVENT_ACCOUNT_IMPORT_PROCESS_ERRORED', 'EVENT_ACCOUNT_IMPORT_PROCESS_CANCELLED',
        'EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_SUCCEEDED', 'EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_ERRORED',
        'EVENT_POST_IMPORT_COMPLETED', 'EVENT_POST_IMPORT_ERRORED',
        'JOB_COMPLETED', 'JOB_FAILED', 'JOB_CANCELLED', 'SUPPLIER_PAUSED'));
ALTER TABLE import_suppliers DROP CONSTRAINT import_suppliers_brake_check,
    DROP COLUMN pause_reason, DROP COLUMN brake_window, DROP COLUMN brake_failure_bp;
