-- +goose Up
-- One record per account-level refusal or failure (CONTRACT §13): a stage
-- refusal, an invalid bulk line, a creation attempt that failed. A repeat
-- of the same failure of the same account updates its record (occurrences,
-- last_seen), so storage is bounded whatever a partner sends: the key is
-- (supplier, external number, source, fingerprint), the fingerprint naming
-- the envelope code and every field error's (code, attr), never the detail
-- (which may quote the value). A later successful stage or creation of the
-- account sets resolved_at, in the transaction of that success.
--
-- The fingerprint, codes and attrs are derived from the error by the
-- functions below, in the database, so every writer (Go or SQL) agrees.
-- An error without field errors counts as one field error: its envelope
-- code at attr ''.

-- +goose StatementBegin
CREATE FUNCTION import_failure_fields(e jsonb) RETURNS TABLE (code text, attr text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(f->>'code', ''), coalesce(f->>'attr', '')
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(e->'errors') = 'array' AND jsonb_array_length(e->'errors') > 0
                                     THEN e->'errors'
                                     ELSE jsonb_build_array(jsonb_build_object('code', e->'code')) END) WITH ORDINALITY AS x(f, n)
     ORDER BY n
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION import_failure_fingerprint(e jsonb) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ('x' || left(md5(coalesce(e->>'code', '') || chr(30) ||
           coalesce((SELECT string_agg(code || chr(31) || attr, chr(30) ORDER BY code, attr) FROM import_failure_fields(e)), '')), 16))::bit(64)::bigint
$$;
-- +goose StatementEnd

CREATE TABLE import_failures (
    id                      bigserial PRIMARY KEY,
    -- The organisation whose request or job saw it; NULL for a creation
    -- outside a job (the account is the supplier's, seen by every
    -- organisation granted it).
    organisation_id         bigint REFERENCES organisations (id) ON DELETE CASCADE,
    supplier_id             bigint NOT NULL REFERENCES import_suppliers (id) ON DELETE CASCADE,
    external_account_number text NOT NULL CHECK (length(external_account_number) <= 512),
    source                  text NOT NULL CHECK (source IN ('stage', 'job_line', 'create')),
    fingerprint             bigint NOT NULL,
    codes                   text[] NOT NULL, -- every field error's code, in order (the summary and filters)
    attrs                   text[] NOT NULL, -- and its attr
    error                   jsonb NOT NULL,  -- the latest occurrence's error envelope
    job_id                  bigint REFERENCES import_jobs (id) ON DELETE SET NULL,
    line                    bigint,
    first_seen              timestamptz NOT NULL DEFAULT now(),
    last_seen               timestamptz NOT NULL DEFAULT now(),
    occurrences             bigint NOT NULL DEFAULT 1 CHECK (occurrences > 0),
    resolved_at             timestamptz,
    UNIQUE (supplier_id, external_account_number, source, fingerprint)
);
-- As every TOASTable column (00016).
ALTER TABLE import_failures ALTER COLUMN external_account_number SET COMPRESSION lz4,
    ALTER COLUMN source SET COMPRESSION lz4, ALTER COLUMN codes SET COMPRESSION lz4,
    ALTER COLUMN attrs SET COMPRESSION lz4, ALTER COLUMN error SET COMPRESSION lz4;
-- The partner list reads one supplier's records in id order. The summary
-- reads every record of a supplier (or of one of its jobs) from the index
-- alone: it carries what the summary needs (an index-only scan of 30,000
-- records is a quarter of the heap's time). The unique key serves
-- resolution (supplier, external); job_idx a job's deletion.
CREATE INDEX import_failures_supplier_idx ON import_failures (supplier_id, id);
CREATE INDEX import_failures_summary_idx ON import_failures (supplier_id, job_id)
    INCLUDE (organisation_id, resolved_at, codes, attrs, external_account_number);
CREATE INDEX import_failures_job_idx ON import_failures (job_id) WHERE job_id IS NOT NULL;

-- +goose Down
DROP TABLE import_failures;
DROP FUNCTION import_failure_fingerprint(jsonb);
DROP FUNCTION import_failure_fields(jsonb);
