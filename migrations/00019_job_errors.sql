-- +goose Up
-- An upload's invalid lines used to carry their error JSON each: a tiny
-- gzipped body of 200,000 identical bad lines grew import_job_records by
-- 68 MB. Identical errors of one job are now stored once, with how many
-- lines have them; an invalid line names its error by a hash (the first 8
-- bytes of the SHA-256 of the error JSON), and the results join it back.
-- Lines whose errors column is set (written later: staging, settling,
-- duplicate lines) keep it; it wins over the shared one.
--
-- No foreign key from the lines: COPY would check it per line, and the
-- rows of both tables are written and deleted together.
CREATE TABLE import_job_errors (
    job_id bigint NOT NULL REFERENCES import_jobs (id) ON DELETE CASCADE,
    hash   bigint NOT NULL,
    error  jsonb NOT NULL,
    n      bigint NOT NULL DEFAULT 0, -- lines of the job with this error
    PRIMARY KEY (job_id, hash)
);
ALTER TABLE import_job_errors ALTER COLUMN error SET COMPRESSION lz4; -- as every TOASTable column (00016)
ALTER TABLE import_job_records ADD COLUMN error_hash bigint;

-- +goose Down
ALTER TABLE import_job_records DROP COLUMN error_hash;
DROP TABLE import_job_errors;
