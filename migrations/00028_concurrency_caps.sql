-- +goose Up
-- Caps per supplier and per organisation inside the cluster-wide cap
-- (settings.concurrency_limit): a slot is taken only if the global cap, its
-- supplier's and its organisation's all allow one more. One row per capped
-- supplier or organisation; no row: no cap of its own.
CREATE TABLE concurrency_caps (
    supplier_id     bigint REFERENCES import_suppliers (id) ON DELETE CASCADE,
    organisation_id bigint REFERENCES organisations (id) ON DELETE CASCADE,
    cap             integer NOT NULL CONSTRAINT concurrency_caps_cap_positive CHECK (cap > 0),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT concurrency_caps_one_subject CHECK (num_nonnulls(supplier_id, organisation_id) = 1)
);
CREATE UNIQUE INDEX concurrency_caps_supplier_idx ON concurrency_caps (supplier_id) WHERE supplier_id IS NOT NULL;
CREATE UNIQUE INDEX concurrency_caps_organisation_idx ON concurrency_caps (organisation_id) WHERE organisation_id IS NOT NULL;
-- Read on every create through the control cache, like the global cap.
CREATE TRIGGER concurrency_caps_control AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON concurrency_caps
    FOR EACH STATEMENT EXECUTE FUNCTION dataimport_control_changed();

-- The organisation the current attempt runs for (the v1 or v2 request's, a
-- bulk job's): its slot counts against that organisation's cap, also when
-- Redis lost the count and it is recounted from the attempts in progress.
-- NULL for attempts started before this column (counted globally and by
-- supplier only). No foreign key: it is written on every start, and a
-- deleted organisation's id only names a cap that no longer exists.
ALTER TABLE import_processes ADD COLUMN attempt_organisation_id bigint;

-- +goose Down
ALTER TABLE import_processes DROP COLUMN attempt_organisation_id;
DROP TABLE concurrency_caps;
