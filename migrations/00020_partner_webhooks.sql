-- +goose Up
-- Partner self-serve webhooks (CONTRACT §15): a partner registers, describes
-- and rotates its own endpoints. A rotated secret stays valid beside the new
-- one until previous_secret_expires_at: attempts are signed with both (the
-- Standard Webhooks header carries several signatures), so a receiver can
-- deploy the new secret without dropping a delivery.
ALTER TABLE webhook_endpoints
    ADD COLUMN description text CHECK (description IS NULL OR length(description) <= 500),
    ADD COLUMN previous_secret text CHECK (previous_secret IS NULL OR previous_secret ~ '^whsec_[A-Za-z0-9+/=]{24,88}$'),
    ADD COLUMN previous_secret_expires_at timestamptz,
    ADD CHECK ((previous_secret IS NULL) = (previous_secret_expires_at IS NULL));
ALTER TABLE webhook_endpoints ALTER COLUMN description SET COMPRESSION lz4,
    ALTER COLUMN previous_secret SET COMPRESSION lz4; -- as every TOASTable column (00016)

-- +goose Down
ALTER TABLE webhook_endpoints
    DROP COLUMN previous_secret_expires_at,
    DROP COLUMN previous_secret,
    DROP COLUMN description;
