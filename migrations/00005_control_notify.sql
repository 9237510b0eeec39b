-- +goose Up
-- Control-plane changes (keys, grants, suppliers, teams, settings) are
-- announced on channel dataimport_control, so API processes can cache them
-- in memory and still see a revocation, a paused supplier or a new limit
-- within milliseconds. One statement-level NOTIFY per statement; Postgres
-- delivers it only after commit, and folds duplicates in one transaction.
-- +goose StatementBegin
CREATE FUNCTION dataimport_control_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('dataimport_control', TG_TABLE_NAME);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER api_keys_control AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION dataimport_control_changed();
CREATE TRIGGER organisation_suppliers_control AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON organisation_suppliers
    FOR EACH STATEMENT EXECUTE FUNCTION dataimport_control_changed();
CREATE TRIGGER import_suppliers_control AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON import_suppliers
    FOR EACH STATEMENT EXECUTE FUNCTION dataimport_control_changed();
CREATE TRIGGER operations_teams_control AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON operations_teams
    FOR EACH STATEMENT EXECUTE FUNCTION dataimport_control_changed();
CREATE TRIGGER settings_control AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON settings
    FOR EACH STATEMENT EXECUTE FUNCTION dataimport_control_changed();

-- +goose Down
DROP TRIGGER settings_control ON settings;
DROP TRIGGER operations_teams_control ON operations_teams;
DROP TRIGGER import_suppliers_control ON import_suppliers;
DROP TRIGGER organisation_suppliers_control ON organisation_suppliers;
DROP TRIGGER api_keys_control ON api_keys;
DROP FUNCTION dataimport_control_changed();
