-- +goose Up
-- Payment instructions (CONTRACT §7): a reference at a payment vendor,
-- verified there, with the details the vendor gave. The two rules partners
-- rely on are database facts, so racing requests cannot break them:
-- one row per (account, vendor, reference), and at most one ACTIVE row per account.
CREATE TABLE payment_instructions (
    id             bigserial PRIMARY KEY,
    account_id     bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    vendor         text NOT NULL CHECK (btrim(vendor) <> ''),
    reference      text NOT NULL CHECK (btrim(reference) <> ''),
    type           text NOT NULL CHECK (type IN ('CARD', 'DIRECT_DEBIT')),
    status         text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'INACTIVE')),
    card_brand     text,
    card_last4     text,
    card_exp_month integer CHECK (card_exp_month BETWEEN 1 AND 12),
    card_exp_year  integer,
    mandate_status text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account_id, vendor, reference),
    CHECK (type <> 'CARD' OR card_last4 IS NOT NULL),
    CHECK (type <> 'DIRECT_DEBIT' OR mandate_status IS NOT NULL)
);
CREATE UNIQUE INDEX payment_instructions_one_active_idx ON payment_instructions (account_id) WHERE status = 'ACTIVE';

-- +goose Down
DROP TABLE payment_instructions;
