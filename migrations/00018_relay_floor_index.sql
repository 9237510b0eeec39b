-- +goose Up
-- The event relay scans the events not numbered yet from a floor (an xid;
-- see positionEventsSQL in pkg/postgres/relay.go), so their index is keyed
-- by xid: the scan starts at the floor and never walks the dead entries
-- that every numbered event leaves behind until a vacuum.
CREATE INDEX import_process_events_unpositioned_xid_idx ON import_process_events (xid) WHERE position IS NULL;
DROP INDEX import_process_events_unpositioned_idx;

-- +goose Down
CREATE INDEX import_process_events_unpositioned_idx ON import_process_events (id) WHERE position IS NULL;
DROP INDEX import_process_events_unpositioned_xid_idx;
