-- +goose Up
-- landed_digest kept, not recomputed on every status read. Reading an
-- account back from its fifteen tables costs about a millisecond of
-- Postgres a read; at a few hundred status reads a second that was half of
-- a two-core machine, and it doubled the status read's latency.
--
-- accounts.landed_version counts the changes to what an account landed as:
-- every write to the account row or to any row it owns bumps it (triggers
-- below), whichever path makes it (post-import requests, an operator's SQL).
-- The creation transaction is the one exception: it writes a new account
-- that no digest has been kept for yet, and says so with the
-- transaction-local setting dataimport.creating, so creation pays one
-- condition a row and nothing else.
--
-- landed_digests keeps a digest with the version it was read at. A reader
-- reads the account and its version in one snapshot, so a digest kept for
-- an older version than the account's is stale and read again; a write
-- that commits while a digest is being read makes it stale, never wrong.
ALTER TABLE accounts ADD COLUMN landed_version bigint NOT NULL DEFAULT 0;

CREATE TABLE landed_digests (
    account_id bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    version    bigint NOT NULL,
    digest     text NOT NULL CHECK (digest ~ '^sha256:[0-9a-f]{64}$')
);
ALTER TABLE landed_digests ALTER COLUMN digest SET COMPRESSION lz4; -- as every TOASTable column (00016)

-- +goose StatementBegin
-- The account row itself: any change but the bump is a change.
CREATE FUNCTION dataimport_landed_account_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.landed_version = OLD.landed_version THEN
        NEW.landed_version := OLD.landed_version + 1;
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
-- A row an account owns: bump its account, found through the column the
-- trigger names (TG_ARGV[0]); on UPDATE both the old and the new owner.
CREATE FUNCTION dataimport_landed_row_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r jsonb;
    owner bigint;
BEGIN
    FOREACH r IN ARRAY ARRAY[CASE WHEN TG_OP <> 'DELETE' THEN to_jsonb(NEW) END,
                             CASE WHEN TG_OP <> 'INSERT' THEN to_jsonb(OLD) END] LOOP
        CONTINUE WHEN r IS NULL;
        owner := CASE TG_ARGV[0]
            WHEN 'account_id' THEN (r->>'account_id')::bigint
            WHEN 'customer_id' THEN (SELECT c.account_id FROM account_customers c WHERE c.id = (r->>'customer_id')::bigint)
            WHEN 'meter_point_id' THEN (SELECT m.account_id FROM meter_points m WHERE m.id = (r->>'meter_point_id')::bigint)
            WHEN 'meter_id' THEN (SELECT m.account_id FROM meters me JOIN meter_points m ON m.id = me.meter_point_id
                                   WHERE me.id = (r->>'meter_id')::bigint)
        END;
        UPDATE accounts SET landed_version = landed_version + 1 WHERE id = owner;
    END LOOP;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
-- TRUNCATE names no rows: every kept digest goes.
CREATE FUNCTION dataimport_landed_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM landed_digests;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER landed_changed BEFORE UPDATE ON accounts FOR EACH ROW
    WHEN (current_setting('dataimport.creating', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION dataimport_landed_account_changed();

-- +goose StatementBegin
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT * FROM (VALUES
        ('account_customers', 'account_id'), ('customer_psr', 'customer_id'),
        ('supply_addresses', 'account_id'), ('meter_points', 'account_id'), ('agreements', 'meter_point_id'),
        ('meters', 'meter_point_id'), ('meter_registers', 'meter_id'), ('transfer_readings', 'meter_id'),
        ('statements', 'account_id'), ('account_transactions', 'account_id'), ('account_notes', 'account_id'),
        ('account_payment_schedules', 'account_id'), ('payment_instructions', 'account_id')) AS v(tab, owner)
    LOOP
        EXECUTE format('CREATE TRIGGER landed_changed AFTER INSERT OR UPDATE OR DELETE ON %I FOR EACH ROW
            WHEN (current_setting(''dataimport.creating'', true) IS DISTINCT FROM ''on'')
            EXECUTE FUNCTION dataimport_landed_row_changed(%L)', t.tab, t.owner);
    END LOOP;
    FOR t IN SELECT * FROM (VALUES ('accounts'), ('account_customers'), ('customer_psr'), ('supply_addresses'),
        ('meter_points'), ('agreements'), ('meters'), ('meter_registers'), ('transfer_readings'), ('statements'),
        ('account_transactions'), ('account_notes'), ('account_payment_schedules'), ('payment_instructions')) AS v(tab)
    LOOP
        EXECUTE format('CREATE TRIGGER landed_truncated AFTER TRUNCATE ON %I FOR EACH STATEMENT
            EXECUTE FUNCTION dataimport_landed_truncated()', t.tab);
    END LOOP;
END $$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOR t IN SELECT DISTINCT c.relname FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
              WHERE g.tgname IN ('landed_changed', 'landed_truncated') LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS landed_changed ON %I', t);
        EXECUTE format('DROP TRIGGER IF EXISTS landed_truncated ON %I', t);
    END LOOP;
END $$;
-- +goose StatementEnd
DROP FUNCTION dataimport_landed_truncated();
DROP FUNCTION dataimport_landed_row_changed();
DROP FUNCTION dataimport_landed_account_changed();
DROP TABLE landed_digests;
ALTER TABLE accounts DROP COLUMN landed_version;
