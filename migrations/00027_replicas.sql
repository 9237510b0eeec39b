-- +goose Up
-- Live API and worker processes (replica hygiene, CONTRACT §14): each one
-- upserts its row every few seconds and deletes it on a clean shutdown; a
-- row not seen for a while is a dead process and is hidden (and swept).
-- The console lists processes from here, not asynq's servers (a worker runs
-- two of those), and flags a replica whose version or settings differ from
-- the others'; a worker reads the API replicas' payment vendors from here
-- to tell whether it can serve what partners are allowed to send.
CREATE TABLE replicas (
    instance    text PRIMARY KEY CHECK (length(instance) <= 64),   -- random per process start
    role        text NOT NULL CHECK (role IN ('api', 'worker')),
    host        text NOT NULL CHECK (length(host) <= 255),
    pid         integer NOT NULL,
    version     text NOT NULL CHECK (length(version) <= 128),      -- vcs.revision[+dirty], else "devel"
    fingerprint text NOT NULL CHECK (length(fingerprint) <= 80),   -- sha256 of the canonical settings
    settings    jsonb NOT NULL,                                   -- what the fingerprint covers
    busy        integer NOT NULL DEFAULT 0 CHECK (busy >= 0),      -- creation slots this process holds
    ready       boolean NOT NULL DEFAULT true,
    reason      text CHECK (length(reason) <= 1000),               -- why not ready
    started_at  timestamptz NOT NULL DEFAULT now(),
    seen_at     timestamptz NOT NULL DEFAULT now()
);
-- As every TOASTable column (00016).
ALTER TABLE replicas ALTER COLUMN instance SET COMPRESSION lz4, ALTER COLUMN role SET COMPRESSION lz4,
    ALTER COLUMN host SET COMPRESSION lz4, ALTER COLUMN version SET COMPRESSION lz4,
    ALTER COLUMN fingerprint SET COMPRESSION lz4, ALTER COLUMN settings SET COMPRESSION lz4,
    ALTER COLUMN reason SET COMPRESSION lz4;

-- +goose Down
DROP TABLE replicas;
