-- +goose Up
-- Partner notifications read the event log (the outbox) in commit order.
-- Ids are handed out before commit, so a slower transaction can commit a
-- smaller id after a reader has passed it. The relay (postgres.PositionEvents)
-- instead numbers events in `position` only once every transaction that
-- could still insert an earlier one has ended (xid below the snapshot's
-- xmin), one relay at a time under an advisory lock: positions become
-- visible in increasing order, and a cursor over them never skips an event.
-- (No trigger notifies on insert: NOTIFY serialises commits, and events are
-- written on the hot path; the relay polls, and notifies once per batch.)
ALTER TABLE import_process_events
    ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    ADD COLUMN position bigint UNIQUE;
CREATE SEQUENCE import_process_events_position_seq;
CREATE INDEX import_process_events_unpositioned_idx ON import_process_events (id) WHERE position IS NULL;

-- +goose Down
DROP INDEX import_process_events_unpositioned_idx;
DROP SEQUENCE import_process_events_position_seq;
ALTER TABLE import_process_events DROP COLUMN position, DROP COLUMN xid;
