-- +goose Up
-- Signed webhooks (CONTRACT §9, issue 17). Endpoints belong to an
-- organisation and receive the events of the suppliers granted to it, read
-- through the same store code as the pull feed. Each endpoint has a cursor
-- over event positions: the dispatcher turns the events after it into
-- delivery rows and moves it in one transaction, so an event is scheduled
-- once per endpoint (unique below) and none is skipped. The retry schedule
-- lives here (next_attempt_at), not in Redis: losing Redis or a worker loses
-- no delivery, the reconciler enqueues what is due again.
CREATE TABLE webhook_endpoints (
    id              bigserial PRIMARY KEY,
    organisation_id bigint NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    url             text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    secret          text NOT NULL CHECK (secret ~ '^whsec_[A-Za-z0-9+/=]{24,88}$'),
    -- Published type names (dataimport.PublishedTypes); empty: every type.
    event_types     text[] NOT NULL DEFAULT '{}',
    enabled         boolean NOT NULL DEFAULT true,
    disabled_reason text CHECK (disabled_reason IS NULL OR length(disabled_reason) <= 1000),
    -- Events up to this position have delivery rows (or were filtered out).
    cursor_position bigint NOT NULL DEFAULT 0 CHECK (cursor_position >= 0),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (enabled = (disabled_reason IS NULL))
);
CREATE INDEX webhook_endpoints_org_idx ON webhook_endpoints (organisation_id);

CREATE TABLE webhook_deliveries (
    id              bigserial PRIMARY KEY,
    endpoint_id     bigint NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id        bigint NOT NULL REFERENCES import_process_events (id) ON DELETE CASCADE,
    -- Attempts started in this round (a replay starts a new round at 0).
    attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    -- When the next attempt is due; set before an attempt is sent to when
    -- the one after it is due, so an attempt cut short by a crash is retried
    -- on schedule.
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_status     integer CHECK (last_status IS NULL OR last_status BETWEEN 100 AND 599),
    last_latency_ms integer CHECK (last_latency_ms IS NULL OR last_latency_ms >= 0),
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';

CREATE TABLE webhook_attempts (
    id               bigserial PRIMARY KEY,
    delivery_id      bigint NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempt          integer NOT NULL CHECK (attempt >= 1),
    at               timestamptz NOT NULL DEFAULT now(),
    status           integer CHECK (status IS NULL OR status BETWEEN 100 AND 599),
    latency_ms       integer NOT NULL CHECK (latency_ms >= 0),
    error            text,
    response_excerpt text
);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, id);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
