-- +goose Up
-- An upload is received in short transactions, a few thousand lines each,
-- not one transaction for the whole body: a transaction open for the
-- minutes a large body takes held back every event behind it (the relay
-- numbers an event only once every older transaction has ended) and every
-- row version the service wrote meanwhile. The lines committed so far belong
-- to one receiving attempt; a retry that takes the job over starts the next
-- epoch and deletes them, and a line batch commits only while its epoch is
-- still the job's.
ALTER TABLE import_jobs ADD COLUMN receive_epoch integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE import_jobs DROP COLUMN receive_epoch;
