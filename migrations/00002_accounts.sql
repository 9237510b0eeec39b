-- +goose Up
-- What an account is made of, created in the worker's one transaction.

ALTER TABLE accounts
    ADD COLUMN details jsonb NOT NULL DEFAULT '{}'::jsonb, -- billing, sales, metadata, references as validated
    ADD COLUMN transfer_balance numeric(16, 2) NOT NULL DEFAULT 0;

-- The dry-run flag of the attempt in progress, so the reconciler can re-enqueue it faithfully.
ALTER TABLE import_processes
    ADD COLUMN dry_run boolean NOT NULL DEFAULT false,
    ADD COLUMN operations_team_id bigint REFERENCES operations_teams (id);

CREATE TABLE account_customers (
    id                   bigserial PRIMARY KEY,
    account_id           bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    position             integer NOT NULL,
    given_name           text NOT NULL,
    family_name          text NOT NULL DEFAULT '',
    title                text NOT NULL DEFAULT '',
    salutation           text NOT NULL DEFAULT '',
    email                text NOT NULL DEFAULT '',
    mobile               text NOT NULL DEFAULT '',
    landline             text NOT NULL DEFAULT '',
    date_of_birth        date,
    customer_preferences jsonb NOT NULL DEFAULT '{}'::jsonb,
    UNIQUE (account_id, position)
);

CREATE TABLE supply_addresses (
    id                                   bigserial PRIMARY KEY,
    account_id                           bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    position                             integer NOT NULL,
    supply_address1                      text NOT NULL,
    supply_address2                      text NOT NULL DEFAULT '',
    supply_address3                      text NOT NULL DEFAULT '',
    supply_address4                      text NOT NULL DEFAULT '',
    supply_address5                      text NOT NULL DEFAULT '',
    supply_postcode                      text NOT NULL,
    customer_at_supply_address_from_date date,
    UNIQUE (account_id, position)
);

CREATE TABLE meter_points (
    id                bigserial PRIMARY KEY,
    account_id        bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    supply_address_id bigint NOT NULL REFERENCES supply_addresses (id) ON DELETE CASCADE,
    mpxn              text NOT NULL,
    fuel              text NOT NULL DEFAULT '',
    supply_start_date date NOT NULL,
    supply_end_date   date,
    UNIQUE (account_id, mpxn),
    CHECK (supply_end_date IS NULL OR supply_end_date >= supply_start_date)
);

CREATE TABLE agreements (
    id             bigserial PRIMARY KEY,
    meter_point_id bigint NOT NULL REFERENCES meter_points (id) ON DELETE CASCADE,
    product_code   text NOT NULL,
    valid_from     date NOT NULL,
    valid_to       date
);
CREATE INDEX agreements_meter_point_idx ON agreements (meter_point_id);

-- Statements: exactly one open statement per account at any time.
CREATE TABLE statements (
    id          bigserial PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    period_from date NOT NULL,
    period_to   date NOT NULL,
    status      text NOT NULL DEFAULT 'OPEN' CHECK (status IN ('OPEN', 'CLOSED')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (period_to >= period_from)
);
CREATE UNIQUE INDEX statements_one_open_idx ON statements (account_id) WHERE status = 'OPEN';

CREATE TABLE account_notes (
    id             bigserial PRIMARY KEY,
    account_id     bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    body           text NOT NULL DEFAULT '',
    document_paths jsonb NOT NULL DEFAULT '[]'::jsonb,
    is_pinned      boolean NOT NULL DEFAULT false,
    unpin_at       timestamptz,
    created_at     timestamptz NOT NULL,
    inserted_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX account_notes_account_idx ON account_notes (account_id, body);

-- Financial transactions; one per (account, transaction_id) is a database fact.
CREATE TABLE account_transactions (
    id                 bigserial PRIMARY KEY,
    account_id         bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    statement_id       bigint NOT NULL REFERENCES statements (id),
    transaction_id     text NOT NULL,
    type               text NOT NULL CHECK (type IN ('CHARGE', 'CREDIT', 'PAYMENT', 'REPAYMENT', 'SUPPLY_CHARGE')),
    transaction_date   date NOT NULL,
    original_date      date,
    amount             numeric(16, 2) NOT NULL CHECK (amount > 0),
    balance_effect     numeric(16, 2) NOT NULL, -- signed: + raises the balance, - lowers it
    description        text NOT NULL DEFAULT '',
    data               jsonb NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account_id, transaction_id)
);

-- One row per finished attempt: the outcome a waiting request reads, and an
-- audit trail of every try.
CREATE TABLE import_attempts (
    process_id              bigint NOT NULL REFERENCES import_processes (id) ON DELETE CASCADE,
    attempt                 integer NOT NULL,
    outcome                 text NOT NULL CHECK (outcome IN ('COMPLETED', 'FAILED', 'DRY_RUN')),
    error                   jsonb,
    platform_account_number text,
    finished_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (process_id, attempt)
);

-- Welcome e-mail outbox: written in the account's transaction, sent by a job
-- after commit; sent_at makes "never twice" a database fact.
CREATE TABLE welcome_emails (
    id          bigserial PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    customer_id bigint NOT NULL REFERENCES account_customers (id) ON DELETE CASCADE,
    email       text NOT NULL,
    sent_at     timestamptz,
    attempts    integer NOT NULL DEFAULT 0,
    last_error  text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (customer_id)
);
CREATE INDEX welcome_emails_unsent_idx ON welcome_emails (created_at) WHERE sent_at IS NULL;

-- +goose Down
DROP TABLE welcome_emails;
DROP TABLE import_attempts;
DROP TABLE account_transactions;
DROP TABLE account_notes;
DROP TABLE statements;
DROP TABLE agreements;
DROP TABLE meter_points;
DROP TABLE supply_addresses;
DROP TABLE account_customers;
ALTER TABLE import_processes DROP COLUMN operations_team_id, DROP COLUMN dry_run;
ALTER TABLE accounts DROP COLUMN transfer_balance, DROP COLUMN details;
