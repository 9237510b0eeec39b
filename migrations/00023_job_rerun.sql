-- +goose Up
-- Re-running a job's invalid or failed lines (CONTRACT §13): a corrected
-- account replaces its line's payload and outcome, and the outcomes it had
-- before are kept, oldest first, as the line's history
-- ([{outcome, error, at}]).
ALTER TABLE import_job_records ADD COLUMN history jsonb;
ALTER TABLE import_job_records ALTER COLUMN history SET COMPRESSION lz4; -- as every TOASTable column (00016)

-- The corrected lines of one re-run request, as the body streams in (in
-- short transactions, as an upload's lines: no transaction or connection is
-- held while the partner sends). They are applied to the job's lines in
-- one transaction once the whole body is in, and deleted by it; a request
-- that died leaves its rows, deleted by the job's next re-run (or with the
-- job).
CREATE TABLE import_job_corrections (
    job_id                  bigint NOT NULL REFERENCES import_jobs (id) ON DELETE CASCADE,
    rerun_id                uuid NOT NULL,
    line                    bigint NOT NULL, -- the line of the re-run's body
    external_account_number text NOT NULL,
    payload                 text NOT NULL,
    created_at              timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, rerun_id, line)
);
ALTER TABLE import_job_corrections ALTER COLUMN payload SET COMPRESSION lz4,
                                   ALTER COLUMN external_account_number SET COMPRESSION lz4;

-- +goose Down
DROP TABLE import_job_corrections;
ALTER TABLE import_job_records DROP COLUMN history;
