-- +goose Up
-- A job's end event carries its control totals too (CONTRACT §14: a
-- mismatch is never silent): the trigger of 00022 adds the declared and
-- counted figures as they stand at the end, under "_control"; the feed
-- compares them with the job's own rule (dataimport.Job.Totals) and shows
-- `control` and `reconciliation` instead.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION import_job_event() RETURNS trigger LANGUAGE plpgsql AS $$
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
            'cancelled', j.n_cancelled),
        '_control', jsonb_build_object(
            'create', j.create_accounts, 'dry_run', j.dry_run, 'declared', j.control_declared,
            'received_transfer_balance', j.received_transfer_balance::text,
            'received_opening_transactions', j.received_opening_transactions::text,
            'received_meter_points', j.received_meter_points,
            'created_transfer_balance', j.created_transfer_balance::text,
            'created_opening_transactions', j.created_opening_transactions::text,
            'created_meter_points', j.created_meter_points)));
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION import_job_event() RETURNS trigger LANGUAGE plpgsql AS $$
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
