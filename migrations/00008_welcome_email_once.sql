-- Welcome e-mails at most once (record-then-send). A worker claims a row
-- (pending → sending, with claimed_at and a deterministic Message-ID) in its
-- own short transaction, commits, talks SMTP with no transaction open, then
-- records the outcome in another. A row still `sending` after its attempt
-- died may or may not have gone out: it becomes `unknown` and is never sent
-- again automatically (`importctl email unknown` / `importctl email resend`).
-- attempts counts claims; the outcome is recorded only by the claim whose
-- number it still holds.

-- +goose Up
ALTER TABLE welcome_emails
    ADD COLUMN state text NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'sending', 'sent', 'unknown', 'undeliverable')),
    ADD COLUMN claimed_at timestamptz,
    ADD COLUMN message_id text;
UPDATE welcome_emails SET state = 'sent' WHERE sent_at IS NOT NULL;
-- Until now a refusal for good was marked by this prefix of last_error.
UPDATE welcome_emails SET state = 'undeliverable'
 WHERE sent_at IS NULL AND left(last_error, 15) = 'undeliverable: ';
ALTER TABLE welcome_emails
    ADD CONSTRAINT welcome_emails_sent_at_state CHECK ((state = 'sent') = (sent_at IS NOT NULL));
DROP INDEX welcome_emails_unsent_idx;
-- What the reconciler scans (pending, or claimed by an attempt that may have died).
CREATE INDEX welcome_emails_open_idx ON welcome_emails (created_at) WHERE state IN ('pending', 'sending');
-- What operators list.
CREATE INDEX welcome_emails_unknown_idx ON welcome_emails (id) WHERE state = 'unknown';

-- +goose Down
-- Rows in sending or unknown look unsent to the old code, which may send them again.
UPDATE welcome_emails SET last_error = 'undeliverable: ' || coalesce(last_error, '')
 WHERE state = 'undeliverable' AND left(coalesce(last_error, ''), 15) <> 'undeliverable: ';
DROP INDEX welcome_emails_unknown_idx;
DROP INDEX welcome_emails_open_idx;
CREATE INDEX welcome_emails_unsent_idx ON welcome_emails (created_at) WHERE sent_at IS NULL;
ALTER TABLE welcome_emails
    DROP CONSTRAINT welcome_emails_sent_at_state,
    DROP COLUMN message_id,
    DROP COLUMN claimed_at,
    DROP COLUMN state;
