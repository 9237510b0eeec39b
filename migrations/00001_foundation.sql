-- +goose Up
-- Tenancy: an organisation holds API keys and may act only for the suppliers granted to it.
CREATE TABLE organisations (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL UNIQUE CHECK (btrim(name) <> ''),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE import_suppliers (
    id            bigserial PRIMARY KEY,
    code          text NOT NULL UNIQUE CHECK (code ~ '^[A-Za-z0-9_.-]{1,64}$'),
    status        text NOT NULL DEFAULT 'Ongoing' CHECK (status IN ('Ongoing', 'Paused', 'Complete')),
    document_root text NOT NULL DEFAULT '',
    welcome_email boolean NOT NULL DEFAULT false,
    phone_region  text NOT NULL DEFAULT 'GB' CHECK (phone_region ~ '^[A-Z]{2}$'),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE organisation_suppliers (
    organisation_id bigint NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    supplier_id     bigint NOT NULL REFERENCES import_suppliers (id) ON DELETE CASCADE,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organisation_id, supplier_id)
);

-- Keys are stored as SHA-256 of a 160-bit random secret: a slow hash adds
-- nothing for secrets of that entropy. The prefix identifies a key for revocation.
CREATE TABLE api_keys (
    id              bigserial PRIMARY KEY,
    organisation_id bigint NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    prefix          text NOT NULL UNIQUE,
    key_hash        bytea NOT NULL UNIQUE CHECK (length(key_hash) = 32),
    created_at      timestamptz NOT NULL DEFAULT now(),
    revoked_at      timestamptz
);
CREATE INDEX api_keys_organisation_idx ON api_keys (organisation_id);

CREATE TABLE operations_teams (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL UNIQUE CHECK (btrim(name) <> ''),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Cluster-wide settings (concurrency limit, token secret). Every replica reads
-- them from here, so a change applies everywhere at once.
CREATE TABLE settings (
    key        text PRIMARY KEY,
    value      text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- One import process per (supplier, external account number). Its staged
-- payloads live in import_process_versions, every version kept.
CREATE TABLE import_processes (
    id                      bigserial PRIMARY KEY,
    supplier_id             bigint NOT NULL REFERENCES import_suppliers (id),
    external_account_number text NOT NULL CHECK (length(external_account_number) BETWEEN 1 AND 128),
    status                  text NOT NULL DEFAULT 'UNKNOWN' CHECK (status IN ('UNKNOWN', 'IN_PROGRESS', 'COMPLETED')),
    skipped                 boolean NOT NULL DEFAULT false,
    staged_version          integer NOT NULL DEFAULT 0,
    attempt                 integer NOT NULL DEFAULT 0,
    latest_error            jsonb,
    platform_account_number text,
    account_created_at      timestamptz,
    created_at              timestamptz NOT NULL DEFAULT now(),
    modified_at             timestamptz NOT NULL DEFAULT now(),
    UNIQUE (supplier_id, external_account_number),
    CHECK ((status = 'COMPLETED') = (platform_account_number IS NOT NULL))
);
CREATE INDEX import_processes_pending_idx ON import_processes (supplier_id, external_account_number) WHERE platform_account_number IS NULL;
CREATE INDEX import_processes_imported_idx ON import_processes (supplier_id, external_account_number) WHERE platform_account_number IS NOT NULL;
CREATE INDEX import_processes_in_progress_idx ON import_processes (modified_at) WHERE status = 'IN_PROGRESS';

CREATE TABLE import_process_versions (
    process_id bigint NOT NULL REFERENCES import_processes (id) ON DELETE CASCADE,
    version    integer NOT NULL CHECK (version > 0),
    payload    jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (process_id, version)
);

-- A platform account. One per import process, numbers unique, both enforced here.
CREATE TABLE accounts (
    id                      bigserial PRIMARY KEY,
    platform_account_number text NOT NULL UNIQUE CHECK (platform_account_number ~ '^A-[0-9A-F]{8}$'),
    supplier_id             bigint NOT NULL REFERENCES import_suppliers (id),
    import_process_id       bigint NOT NULL UNIQUE REFERENCES import_processes (id),
    external_account_number text NOT NULL,
    account_type            text NOT NULL CHECK (account_type IN ('DOMESTIC', 'BUSINESS')),
    balance                 numeric(16, 2) NOT NULL DEFAULT 0,
    created_at              timestamptz NOT NULL DEFAULT now(),
    UNIQUE (supplier_id, external_account_number)
);
ALTER TABLE import_processes
    ADD CONSTRAINT import_processes_platform_account_fk
    FOREIGN KEY (platform_account_number) REFERENCES accounts (platform_account_number) DEFERRABLE INITIALLY DEFERRED;

-- +goose Down
DROP TABLE accounts CASCADE;
DROP TABLE import_process_versions;
DROP TABLE import_processes;
DROP TABLE settings;
DROP TABLE operations_teams;
DROP TABLE api_keys;
DROP TABLE organisation_suppliers;
DROP TABLE import_suppliers;
DROP TABLE organisations;
