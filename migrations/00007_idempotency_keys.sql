-- +goose Up
-- Idempotency keys (CONTRACT §12). A POST sent with Idempotency-Key claims
-- (organisation, key) here before it runs; its first complete answer is kept
-- until expires_at and replayed byte for byte to retries of the same request.
-- Keys belong to an organisation, so two partners' keys never meet.
--
-- A claim is in flight until its request stores its answer (complete) or
-- drops the claim (answers that are not kept: 5xx, 429, 401, client gone).
-- locked_until is the claim's lease: a request whose process died (SIGKILL)
-- never drops its claim, so after the lease another request for the same
-- key may take it over; claim_id says which request holds it, so that the
-- late original can neither store nor drop the new holder's claim.
CREATE TABLE idempotency_keys (
    organisation_id  bigint NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    key              text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    method           text NOT NULL,
    path             text NOT NULL,            -- path and raw query string, as sent
    body_sha256      bytea NOT NULL CHECK (length(body_sha256) = 32),
    state            text NOT NULL DEFAULT 'in_flight' CHECK (state IN ('in_flight', 'complete')),
    claim_id         uuid NOT NULL,
    locked_until     timestamptz NOT NULL,
    response_status  integer,
    response_headers jsonb,                    -- {"Content-Type": ["application/json"], ...}
    response_body    bytea,
    created_at       timestamptz NOT NULL DEFAULT now(),
    expires_at       timestamptz NOT NULL,
    PRIMARY KEY (organisation_id, key),
    CHECK ((state = 'complete') = (response_status IS NOT NULL AND response_headers IS NOT NULL AND response_body IS NOT NULL))
);
-- The worker's sweep deletes expired keys, oldest first, in bounded batches.
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
