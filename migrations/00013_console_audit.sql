-- +goose Up
-- Operator console (CONTRACT §12): operators log in with a password
-- (bcrypt); `importctl operator create` sets a one-time password that must be
-- changed at the first login (must_change_password).
CREATE TABLE operators (
    id                   bigserial PRIMARY KEY,
    name                 text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9_.@-]{1,64}$'),
    password_hash        text NOT NULL CHECK (password_hash <> ''),
    must_change_password boolean NOT NULL DEFAULT true,
    created_at           timestamptz NOT NULL DEFAULT now(),
    password_changed_at  timestamptz
);

-- A session is a random 256-bit token in an HttpOnly cookie; only its
-- SHA-256 is kept, so a read of this table gives nobody a session.
CREATE TABLE operator_sessions (
    token_hash  bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    operator_id bigint NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);
CREATE INDEX operator_sessions_expires_idx ON operator_sessions (expires_at);

-- Every operator action, from the console or importctl, written in the
-- transaction of the change it records (postgres.(*DB).Audit): who, what,
-- on what, before, after, when. Never updated.
CREATE TABLE audit_log (
    id     bigserial PRIMARY KEY,
    at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor  text NOT NULL CHECK (length(actor) BETWEEN 1 AND 200),
    action text NOT NULL CHECK (action ~ '^[a-z][a-z0-9_.]{0,63}$'),
    target text NOT NULL DEFAULT '',
    before jsonb,
    after  jsonb
);
CREATE INDEX audit_log_at_idx ON audit_log (at);

-- The console's overview reads counts per supplier and status, the oldest
-- account in progress and accounts created per minute on every refresh.
-- These indexes let each be an index-only scan (no heap visit, no full scan
-- of the table) however many processes there are.
CREATE INDEX import_processes_overview_idx ON import_processes (supplier_id, v2_status, scheduled);
CREATE INDEX import_processes_in_progress_supplier_idx ON import_processes (supplier_id, modified_at) WHERE status = 'IN_PROGRESS';
CREATE INDEX import_processes_created_minute_idx ON import_processes (account_created_at, supplier_id) WHERE account_created_at IS NOT NULL;

-- +goose Down
DROP INDEX import_processes_created_minute_idx;
DROP INDEX import_processes_in_progress_supplier_idx;
DROP INDEX import_processes_overview_idx;
DROP TABLE audit_log;
DROP TABLE operator_sessions;
DROP TABLE operators;
