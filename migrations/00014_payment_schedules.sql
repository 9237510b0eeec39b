-- +goose Up
-- Payment schedules of an account (issue 18, item 4): how and how often the
-- customer pays. Created with the account in its creation transaction; the
-- payment instructions given with the account go to payment_instructions
-- (migration 00004) in the same transaction, verified at the vendor first.
CREATE TABLE account_payment_schedules (
    id         bigserial PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    position   integer NOT NULL CHECK (position >= 0),
    means      text NOT NULL CHECK (means IN ('DIRECT_DEBIT', 'CARD', 'BANK_TRANSFER', 'CASH_CHEQUE')),
    start_date date NOT NULL,
    frequency  text NOT NULL CHECK (frequency IN ('WEEKLY', 'FORTNIGHTLY', 'FOUR_WEEKLY', 'MONTHLY', 'QUARTERLY', 'ANNUALLY')),
    amount     numeric(16, 2) NOT NULL CHECK (amount > 0),
    UNIQUE (account_id, position)
);

-- +goose Down
DROP TABLE account_payment_schedules;
