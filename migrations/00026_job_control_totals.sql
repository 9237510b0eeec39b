-- +goose Up
-- Control totals of a bulk job (CONTRACT §14): what the partner declares its
-- source holds, beside what the job received and created. Each line keeps
-- its own figures, taken from its validated account as it is received (so
-- settling a line adds them to the job's created figures in the statement
-- that settles it, never re-reading a payload); the job keeps the sums.
-- Account counts need no column: the counters hold them.
--
-- Declared figures are partner input, parsed and bounded by the API (a
-- count fits a bigint, a total is a decimal of at most 2 places), and kept
-- as the decimal strings they were sent as: {"transfer_balance_total": "12.30", ...}.
ALTER TABLE import_jobs
    ADD COLUMN control_declared jsonb,
    ADD COLUMN received_transfer_balance numeric NOT NULL DEFAULT 0,
    ADD COLUMN received_opening_transactions numeric NOT NULL DEFAULT 0,
    ADD COLUMN received_meter_points bigint NOT NULL DEFAULT 0,
    ADD COLUMN created_transfer_balance numeric NOT NULL DEFAULT 0,
    ADD COLUMN created_opening_transactions numeric NOT NULL DEFAULT 0,
    ADD COLUMN created_meter_points bigint NOT NULL DEFAULT 0;
-- As every TOASTable column (00016), numeric included.
ALTER TABLE import_jobs
    ALTER COLUMN control_declared SET COMPRESSION lz4,
    ALTER COLUMN received_transfer_balance SET COMPRESSION lz4,
    ALTER COLUMN received_opening_transactions SET COMPRESSION lz4,
    ALTER COLUMN created_transfer_balance SET COMPRESSION lz4,
    ALTER COLUMN created_opening_transactions SET COMPRESSION lz4;

-- NULL for an invalid line (it has no account to count).
ALTER TABLE import_job_records
    ADD COLUMN transfer_balance numeric,
    ADD COLUMN opening_transactions numeric,
    ADD COLUMN meter_points integer;
ALTER TABLE import_job_records
    ALTER COLUMN transfer_balance SET COMPRESSION lz4,
    ALTER COLUMN opening_transactions SET COMPRESSION lz4;

-- Reading an account back from its tables (reconciliation, landed_digest)
-- finds its statements by account: only the open one was indexed.
CREATE INDEX statements_account_idx ON statements (account_id);

-- +goose Down
DROP INDEX statements_account_idx;
ALTER TABLE import_job_records DROP COLUMN transfer_balance, DROP COLUMN opening_transactions, DROP COLUMN meter_points;
ALTER TABLE import_jobs DROP COLUMN control_declared, DROP COLUMN received_transfer_balance, DROP COLUMN received_opening_transactions,
    DROP COLUMN received_meter_points, DROP COLUMN created_transfer_balance, DROP COLUMN created_opening_transactions,
    DROP COLUMN created_meter_points;
