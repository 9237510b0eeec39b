-- +goose Up
-- Large values (account payloads of 4 KB and more, job lines, events) are
-- compressed with lz4 instead of pglz: several times less CPU to write and
-- read, for a few percent more disk. Every toastable column of our tables
-- is switched (a rule that walks the schema, so no table is forgotten;
-- TestToastCompressionLZ4 holds later migrations to it). A server built
-- without lz4 keeps pglz.
-- +goose StatementBegin
DO $$
DECLARE c record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_settings
                    WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        RAISE NOTICE 'lz4 not available; TOAST compression stays pglz';
        RETURN;
    END IF;
    FOR c IN
        SELECT cl.relname, a.attname
          FROM pg_attribute a
          JOIN pg_class cl ON cl.oid = a.attrelid
          JOIN pg_namespace n ON n.oid = cl.relnamespace
         WHERE n.nspname = current_schema() AND cl.relkind IN ('r', 'p')
           AND a.attnum > 0 AND NOT a.attisdropped AND a.attstorage IN ('x', 'm')
           AND a.attcompression <> 'l'
    LOOP
        EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET COMPRESSION lz4', c.relname, c.attname);
    END LOOP;
END $$;
-- +goose StatementEnd

-- +goose Down
SELECT 1;
