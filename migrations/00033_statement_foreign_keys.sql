-- +goose Up
-- The foreign keys of the tables the import writes for every account are
-- checked once per statement instead of once per row.
--
-- A declared foreign key checks each inserted row with a query of its own
-- (planned, run and locking the parent row through SPI): about 4 µs a row,
-- and a bulk account writes about 60 checked rows (29 account rows, four
-- events with three keys each, its process, attempt, version and job line).
-- That was a fifth of Postgres's CPU in a bulk run. The same check for a
-- whole statement (every distinct key of the inserted rows looked up and
-- locked FOR KEY SHARE in one query) costs a fraction of a millisecond for a
-- round of a hundred accounts.
--
-- Each foreign key of the tables listed below keeps its name, columns,
-- parent and ON DELETE action in dataimport_statement_fks (the Down
-- migration declares them again from there) and is enforced by triggers:
--   INSERT into the child: a statement trigger over the inserted rows (a
--     function per key, so its plan is kept), locking each parent row
--     FOR KEY SHARE as the declared check did;
--   UPDATE of the child's key: a row trigger (a function per key), when
--     the key changed;
--   DELETE from the parent: a statement trigger that deletes the children
--     (ON DELETE CASCADE) or refuses while they exist (NO ACTION);
--   UPDATE of the parent's key: refused while it is referenced;
--   TRUNCATE of the parent: refused while the child has rows (truncate
--     them in one statement).
-- A violation raises SQLSTATE 23503 naming the constraint, as before. The
-- view dataimport_foreign_keys lists declared and statement-checked keys
-- alike, for whatever walks the schema's references.
CREATE TABLE dataimport_statement_fks (
    name        text PRIMARY KEY,
    child       text NOT NULL,
    child_cols  text[] NOT NULL CHECK (cardinality(child_cols) > 0),
    parent      text NOT NULL,
    parent_cols text[] NOT NULL CHECK (cardinality(parent_cols) = cardinality(child_cols)),
    on_delete   text NOT NULL CHECK (on_delete IN ('CASCADE', 'NO ACTION')),
    definition  text NOT NULL
);
ALTER TABLE dataimport_statement_fks -- as every TOASTable column (00016)
    ALTER COLUMN name SET COMPRESSION lz4, ALTER COLUMN child SET COMPRESSION lz4,
    ALTER COLUMN child_cols SET COMPRESSION lz4, ALTER COLUMN parent SET COMPRESSION lz4,
    ALTER COLUMN parent_cols SET COMPRESSION lz4, ALTER COLUMN on_delete SET COMPRESSION lz4,
    ALTER COLUMN definition SET COMPRESSION lz4;

CREATE VIEW dataimport_foreign_keys AS
SELECT c.conname::text AS name, c.conrelid::regclass::text AS child,
       ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, i)
               JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.i) AS child_cols,
       c.confrelid::regclass::text AS parent,
       ARRAY(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(n, i)
               JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.i) AS parent_cols,
       CASE c.confdeltype WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT'
            WHEN 'r' THEN 'RESTRICT' ELSE 'NO ACTION' END AS on_delete,
       false AS per_statement
  FROM pg_constraint c
 WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace
UNION ALL
SELECT name, child, child_cols, parent, parent_cols, on_delete, true FROM dataimport_statement_fks;

-- +goose StatementBegin
-- The parent's side of every statement-checked key (DELETE, a key's
-- UPDATE, TRUNCATE): rare, so one function for all keys, its queries built
-- from the key's record.
CREATE FUNCTION dataimport_fk_enforce() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    k dataimport_statement_fks;
    c_cols text;
    p_cols text;
    bad text;
BEGIN
    SELECT * INTO STRICT k FROM dataimport_statement_fks WHERE name = TG_ARGV[0];
    c_cols := (SELECT string_agg(format('%I', x), ', ' ORDER BY i) FROM unnest(k.child_cols) WITH ORDINALITY u(x, i));
    p_cols := (SELECT string_agg(format('%I', x), ', ' ORDER BY i) FROM unnest(k.parent_cols) WITH ORDINALITY u(x, i));
    IF TG_OP = 'DELETE' AND k.on_delete = 'CASCADE' THEN
        EXECUTE format('DELETE FROM %I c WHERE (%s) IN (SELECT %s FROM fk_old)', k.child,
                       (SELECT string_agg(format('c.%I', x), ', ' ORDER BY i) FROM unnest(k.child_cols) WITH ORDINALITY u(x, i)), p_cols);
        RETURN NULL;
    END IF;
    IF TG_OP = 'TRUNCATE' THEN
        -- AFTER TRUNCATE runs once every table of the statement is empty:
        -- a child truncated with its parent has no rows left.
        EXECUTE format('SELECT ''any'' FROM %I LIMIT 1', k.child) INTO bad;
        IF bad IS NOT NULL THEN
            RAISE EXCEPTION 'cannot truncate a table referenced in a foreign key constraint'
                USING ERRCODE = 'feature_not_supported', CONSTRAINT = k.name, TABLE = k.parent, SCHEMA = TG_TABLE_SCHEMA,
                      DETAIL = format('Table "%s" references "%s".', k.child, k.parent),
                      HINT = format('Truncate table "%s" at the same time.', k.child);
        END IF;
        RETURN NULL;
    END IF;
    -- DELETE under NO ACTION, or an UPDATE of the parent's key: refused
    -- while a child row still references a removed key.
    IF TG_OP = 'DELETE' THEN
        EXECUTE format('SELECT concat_ws('', '', %s) FROM %I c WHERE (%s) IN (SELECT %s FROM fk_old) LIMIT 1',
                       (SELECT string_agg(format('c.%I', x), ', ' ORDER BY i) FROM unnest(k.child_cols) WITH ORDINALITY u(x, i)),
                       k.child,
                       (SELECT string_agg(format('c.%I', x), ', ' ORDER BY i) FROM unnest(k.child_cols) WITH ORDINALITY u(x, i)),
                       p_cols) INTO bad;
    ELSE
        EXECUTE format('SELECT concat_ws('', '', %s) FROM %I c, jsonb_populate_record(NULL::%I, $1) o WHERE (%s) = (%s) LIMIT 1',
                       (SELECT string_agg(format('c.%I', x), ', ' ORDER BY i) FROM unnest(k.child_cols) WITH ORDINALITY u(x, i)),
                       k.child, k.parent,
                       (SELECT string_agg(format('c.%I', x), ', ' ORDER BY i) FROM unnest(k.child_cols) WITH ORDINALITY u(x, i)),
                       (SELECT string_agg(format('o.%I', x), ', ' ORDER BY i) FROM unnest(k.parent_cols) WITH ORDINALITY u(x, i)))
           INTO bad USING to_jsonb(OLD);
    END IF;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'update or delete on table "%" violates foreign key constraint "%" on table "%"', k.parent, k.name, k.child
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = k.name, TABLE = k.parent, SCHEMA = TG_TABLE_SCHEMA,
                  DETAIL = format('Key (%s)=(%s) is still referenced from table "%s".', p_cols, bad, k.child);
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $do$
DECLARE
    k record;
    n_cols text;    -- n.c1, n.c2 (the inserted rows' key)
    p_cols text;    -- p.p1, p.p2 (the parent's)
    c_list text;    -- c1, c2 (for messages)
    not_null text;  -- n.c1 IS NOT NULL AND ...
    joined text;    -- p.p1 = n.c1 AND ...
    old_cols text;  -- OLD.c1, ... (child) / OLD.p1, ... (parent)
    new_cols text;
BEGIN
    FOR k IN
        SELECT f.*, c.confdeltype, c.confupdtype, c.condeferrable, pg_get_constraintdef(c.oid) AS definition
          FROM dataimport_foreign_keys f
          JOIN pg_constraint c ON c.conname = f.name AND c.conrelid = f.child::regclass AND c.contype = 'f'
         WHERE NOT f.per_statement AND f.child IN (
                'accounts', 'account_customers', 'customer_psr', 'supply_addresses', 'meter_points', 'agreements',
                'meters', 'meter_registers', 'transfer_readings', 'statements', 'account_transactions',
                'account_notes', 'account_payment_schedules', 'payment_instructions', 'welcome_emails',
                'import_processes', 'import_process_versions', 'import_process_events', 'import_attempts',
                'import_job_records')
           AND NOT c.condeferrable -- checked at commit: left declared
         ORDER BY f.name
    LOOP
        IF k.confdeltype NOT IN ('a', 'c') OR k.confupdtype <> 'a' THEN
            RAISE EXCEPTION 'foreign key % has an action not checked per statement', k.name;
        END IF;
        INSERT INTO dataimport_statement_fks VALUES (k.name, k.child, k.child_cols, k.parent, k.parent_cols, k.on_delete, k.definition);
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', k.child, k.name);

        n_cols := (SELECT string_agg(format('n.%I', x), ', ' ORDER BY i) FROM unnest(k.child_cols) WITH ORDINALITY u(x, i));
        p_cols := (SELECT string_agg(format('p.%I', x), ', ' ORDER BY i) FROM unnest(k.parent_cols) WITH ORDINALITY u(x, i));
        c_list := (SELECT string_agg(format('%I', x), ', ' ORDER BY i) FROM unnest(k.child_cols) WITH ORDINALITY u(x, i));
        not_null := (SELECT string_agg(format('n.%I IS NOT NULL', x), ' AND ' ORDER BY i) FROM unnest(k.child_cols) WITH ORDINALITY u(x, i));
        joined := (SELECT string_agg(format('p.%I = n.%I', k.parent_cols[i], x), ' AND ' ORDER BY i) FROM unnest(k.child_cols) WITH ORDINALITY u(x, i));

        -- The INSERT check: as many parent rows locked as distinct keys
        -- inserted, found through the parent's unique index (= ANY of the
        -- keys' first column), counted in one query (a per-account
        -- creation's statements insert a row or two, so what each firing
        -- costs counts more than the rows). Its plan is kept for the
        -- session, and one made while the parent was small would scan it
        -- whole until the parent is next analyzed: enable_seqscan off
        -- keeps it on the index whatever the sizes.
        EXECUTE format($f$
            CREATE FUNCTION %I() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $body$
            DECLARE
                ok boolean;
                bad text;
            BEGIN
                SELECT (SELECT count(*) FROM (SELECT DISTINCT %s FROM fk_new n WHERE %s) k)
                     = (SELECT count(*) FROM (
                          SELECT 1 FROM %I p
                           WHERE p.%I = ANY (ARRAY(SELECT n.%I FROM fk_new n WHERE %s))%s
                             FOR KEY SHARE OF p) locked)
                  INTO ok;
                IF NOT ok THEN
                    SELECT concat_ws(', ', %s) INTO bad FROM fk_new n
                     WHERE %s AND NOT EXISTS (SELECT 1 FROM %I p WHERE %s) LIMIT 1;
                    RAISE EXCEPTION 'insert or update on table "%%" violates foreign key constraint "%%"', %L, %L
                        USING ERRCODE = 'foreign_key_violation', CONSTRAINT = %L, TABLE = %L, SCHEMA = TG_TABLE_SCHEMA,
                              DETAIL = format('Key (%%s)=(%%s) is not present in table "%%s".', %L, bad, %L);
                END IF;
                RETURN NULL;
            END $body$$f$,
            'dataimport_fk_ins_' || k.name,
            n_cols, not_null,
            k.parent, k.parent_cols[1], k.child_cols[1], not_null,
            -- a key of several columns: the first finds the rows, the
            -- whole key picks them
            CASE WHEN cardinality(k.child_cols) > 1
                 THEN format(' AND EXISTS (SELECT 1 FROM fk_new n WHERE %s AND %s)', not_null, joined) ELSE '' END,
            n_cols, not_null, k.parent, joined,
            k.child, k.name, k.name, k.child, c_list, k.parent);
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS fk_new
                        FOR EACH STATEMENT EXECUTE FUNCTION %I()', k.name || '_ins', k.child, 'dataimport_fk_ins_' || k.name);

        -- A child row's key changed (an UPDATE setting it): the same check
        -- for the row, fired only when the key changed.
        old_cols := (SELECT string_agg(format('OLD.%I', x), ', ' ORDER BY i) FROM unnest(k.child_cols) WITH ORDINALITY u(x, i));
        new_cols := (SELECT string_agg(format('NEW.%I', x), ', ' ORDER BY i) FROM unnest(k.child_cols) WITH ORDINALITY u(x, i));
        EXECUTE format($f$
            CREATE FUNCTION %I() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $body$
            BEGIN
                IF num_nulls(%s) > 0 THEN
                    RETURN NULL;
                END IF;
                PERFORM 1 FROM %I p WHERE %s FOR KEY SHARE OF p;
                IF NOT FOUND THEN
                    RAISE EXCEPTION 'insert or update on table "%%" violates foreign key constraint "%%"', %L, %L
                        USING ERRCODE = 'foreign_key_violation', CONSTRAINT = %L, TABLE = %L, SCHEMA = TG_TABLE_SCHEMA,
                              DETAIL = format('Key (%%s)=(%%s) is not present in table "%%s".', %L, concat_ws(', ', %s), %L);
                END IF;
                RETURN NULL;
            END $body$$f$,
            'dataimport_fk_upd_' || k.name, new_cols, k.parent, (SELECT string_agg(format('p.%I = NEW.%I', k.parent_cols[i], x), ' AND ' ORDER BY i)
                                                             FROM unnest(k.child_cols) WITH ORDINALITY u(x, i)),
            k.child, k.name, k.name, k.child, c_list, new_cols, k.parent);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE OF %s ON %I FOR EACH ROW
                        WHEN (ROW(%s) IS DISTINCT FROM ROW(%s)) EXECUTE FUNCTION %I()',
                       k.name || '_upd', c_list, k.child, old_cols, new_cols, 'dataimport_fk_upd_' || k.name);

        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS fk_old
                        FOR EACH STATEMENT EXECUTE FUNCTION dataimport_fk_enforce(%L)', k.name || '_del', k.parent, k.name);
        old_cols := (SELECT string_agg(format('OLD.%I', x), ', ' ORDER BY i) FROM unnest(k.parent_cols) WITH ORDINALITY u(x, i));
        new_cols := (SELECT string_agg(format('NEW.%I', x), ', ' ORDER BY i) FROM unnest(k.parent_cols) WITH ORDINALITY u(x, i));
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE OF %s ON %I FOR EACH ROW
                        WHEN (ROW(%s) IS DISTINCT FROM ROW(%s)) EXECUTE FUNCTION dataimport_fk_enforce(%L)',
                       k.name || '_key', (SELECT string_agg(format('%I', x), ', ' ORDER BY i) FROM unnest(k.parent_cols) WITH ORDINALITY u(x, i)),
                       k.parent, old_cols, new_cols, k.name);
        EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION dataimport_fk_enforce(%L)',
                       k.name || '_truncate', k.parent, k.name);
    END LOOP;
END $do$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    k dataimport_statement_fks;
BEGIN
    FOR k IN SELECT * FROM dataimport_statement_fks ORDER BY name LOOP
        EXECUTE format('DROP TRIGGER %I ON %I', k.name || '_ins', k.child);
        EXECUTE format('DROP TRIGGER %I ON %I', k.name || '_upd', k.child);
        EXECUTE format('DROP TRIGGER %I ON %I', k.name || '_del', k.parent);
        EXECUTE format('DROP TRIGGER %I ON %I', k.name || '_key', k.parent);
        EXECUTE format('DROP TRIGGER %I ON %I', k.name || '_truncate', k.parent);
        EXECUTE format('DROP FUNCTION %I()', 'dataimport_fk_ins_' || k.name);
        EXECUTE format('DROP FUNCTION %I()', 'dataimport_fk_upd_' || k.name);
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I %s', k.child, k.name, k.definition);
    END LOOP;
END $$;
-- +goose StatementEnd
DROP FUNCTION dataimport_fk_enforce();
DROP VIEW dataimport_foreign_keys;
DROP TABLE dataimport_statement_fks;
