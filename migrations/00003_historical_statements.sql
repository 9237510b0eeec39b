-- +goose Up
-- Historical statements (interface 2.8, CONTRACT §7): statements issued before
-- the migration, kept as data and a reference to their PDF. One per
-- (account, statement_id) is a database fact.
CREATE TABLE historical_statements (
    id                    bigserial PRIMARY KEY,
    account_id            bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    statement_id          text NOT NULL,
    bill_period_from_date date NOT NULL,
    bill_period_to_date   date NOT NULL,
    issued_date           date,
    number                text,
    gross_amount          numeric(16, 2),
    statement_path        text, -- relative to the supplier's document root
    created_at            timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account_id, statement_id),
    CHECK (bill_period_to_date >= bill_period_from_date)
);

-- +goose Down
DROP TABLE historical_statements;
