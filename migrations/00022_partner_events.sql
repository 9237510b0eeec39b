-- +goose Up
-- Partner events that are not about one account's import process (CONTRACT
-- §13, §14): a job's end (job.completed-v1, job.failed-v1,
-- job.cancelled-v1) and a supplier paused by the brake (supplier.paused-v1).
-- They live in the same event log as the account events, so the relay
-- numbers them in the same commit order and the pull feed and webhooks carry
-- them with no second path. Such a row names its supplier (and, for a job's
-- events, the organisation that owns the job: no other organisation sees
-- them) instead of a process.
ALTER TABLE import_process_events
    ALTER COLUMN process_id DROP NOT NULL,
    ADD COLUMN supplier_id bigint REFERENCES import_suppliers (id) ON DELETE CASCADE,
    ADD COLUMN organisation_id bigint REFERENCES organisations (id) ON DELETE CASCADE,
    ADD CONSTRAINT import_process_events_subject_check CHECK ((process_id IS NULL) = (supplier_id IS NOT NULL)
                                                             AND (organisation_id IS NULL OR supplier_id IS NOT NULL)),
    DROP CONSTRAINT import_process_events_event_check,
    ADD CONSTRAINT import_process_events_event_check CHECK (event IN (
        'EVENT_ACCOUNT_IMPORT_PROCESS_STAGED', 'EVENT_ACCOUNT_IMPORT_PROCESS_SCHEDULED',
        'EVENT_ACCOUNT_IMPORT_PROCESS_STARTED', 'EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED',
        'EVENT_ACCOUNT_IMPORT_PROCESS_ERRORED', 'EVENT_ACCOUNT_IMPORT_PROCESS_CANCELLED',
        'EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_SUCCEEDED', 'EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_ERRORED',
        'EVENT_POST_IMPORT_COMPLETED', 'EVENT_POST_IMPORT_ERRORED',
        'JOB_COMPLETED', 'JOB_FAILED', 'JOB_CANCELLED', 'SUPPLIER_PAUSED'));
-- Deleting a supplier or an organisation finds its events by these.
CREATE INDEX import_process_events_supplier_idx ON import_process_events (supplier_id) WHERE supplier_id IS NOT NULL;
CREATE INDEX import_process_events_organisation_idx ON import_process_events (organisation_id) WHERE organisation_id IS NOT NULL;

-- A job's end is recorded by the database, in the transaction that ends it,
-- whichever statement does (settling, cancel, a refused or lost upload, the
-- mostly-invalid brake, a re-run finishing again): a writer added later
-- cannot forget it. The trigger runs at commit (deferred) and reads the row
-- then, so the counters are those the transaction leaves (cancel moves
-- them after it sets the state). import_supplier and the failures
-- summary's address are added when the feed reads it.
-- +goose StatementBegin
CREATE FUNCTION import_job_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    j import_jobs;
BEGIN
    SELECT * INTO j FROM import_jobs WHERE id = NEW.id;
    IF NOT FOUND OR j.state NOT IN ('COMPLETED', 'FAILED', 'CANCELLED') THEN
        RETURN NULL;
    END IF;
    INSERT INTO import_process_events (supplier_id, organisation_id, event, data)
    VALUES (j.supplier_id, j.organisation_id, 'JOB_' || j.state, jsonb_build_object(
        'job_id', j.id, 'state', j.state, 'counters', jsonb_build_object(
            'received', j.n_received, 'pending', j.n_pending, 'invalid', j.n_invalid,
            'duplicate_line', j.n_duplicate_line, 'staged', j.n_staged, 'in_progress', j.n_in_progress,
            'created', j.n_created, 'already_imported', j.n_already_imported, 'failed', j.n_failed,
            'cancelled', j.n_cancelled)));
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE CONSTRAINT TRIGGER import_jobs_ended AFTER UPDATE OF state ON import_jobs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state AND NEW.state IN ('COMPLETED', 'FAILED', 'CANCELLED'))
    EXECUTE FUNCTION import_job_event();
CREATE CONSTRAINT TRIGGER import_jobs_born_ended AFTER INSERT ON import_jobs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (NEW.state IN ('COMPLETED', 'FAILED', 'CANCELLED'))
    EXECUTE FUNCTION import_job_event();

-- +goose Down
DROP TRIGGER import_jobs_born_ended ON import_jobs;
DROP TRIGGER import_jobs_ended ON import_jobs;
DROP FUNCTION import_job_event();
DELETE FROM import_process_events WHERE process_id IS NULL;
DROP INDEX import_process_events_organisation_idx;
DROP INDEX import_process_events_supplier_idx;
ALTER TABLE import_process_events
    DROP CONSTRAINT import_process_events_event_check,
    ADD CONSTRAINT import_process_events_event_check CHECK (event IN (
        'EVENT_ACCOUNT_IMPORT_PROCESS_STAGED', 'EVENT_ACCOUNT_IMPORT_PROCESS_SCHEDULED',
        'EVENT_ACCOUNT_IMPORT_PROCESS_STARTED', 'EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED',
        'EVENT_ACCOUNT_IMPORT_PROCESS_ERRORED', 'EVENT_ACCOUNT_IMPORT_PROCESS_CANCELLED',
        'EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_SUCCEEDED', 'EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_ERRORED',
        'EVENT_POST_IMPORT_COMPLETED', 'EVENT_POST_IMPORT_ERRORED')),
    DROP CONSTRAINT import_process_events_subject_check,
    DROP COLUMN organisation_id,
    DROP COLUMN supplier_id,
    ALTER COLUMN process_id SET NOT NULL;
