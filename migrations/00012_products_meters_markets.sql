-- +goose Up
-- Issue 18 / CONTRACT §10: the product catalogue, meter data on meter
-- points, priority-services entries on customers, and the supplier settings
-- that decide which rules an account meets (a market's rule set, whether
-- agreements must name catalogue products). API keys gain scopes: writing
-- the instance-wide catalogue needs "products".

ALTER TABLE import_suppliers
    ADD COLUMN require_products boolean NOT NULL DEFAULT false,
    ADD COLUMN market text NOT NULL DEFAULT 'NONE' CHECK (market ~ '^[A-Z][A-Z0-9_]{1,15}$');

ALTER TABLE api_keys ADD COLUMN scopes text[] NOT NULL DEFAULT '{}';

-- Products are instance-wide. A product's tariffs are replaced as a whole
-- by each create-or-update, in one transaction.
CREATE TABLE products (
    id             bigserial PRIMARY KEY,
    code           text NOT NULL UNIQUE,
    full_name      text NOT NULL,
    display_name   text NOT NULL,
    available_from date NOT NULL,
    available_to   date,
    is_variable    boolean NOT NULL DEFAULT false,
    is_green       boolean NOT NULL DEFAULT false,
    is_prepay      boolean NOT NULL DEFAULT false,
    is_business    boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CHECK (available_to IS NULL OR available_to >= available_from)
);

-- A tariff code names one tariff of one product across the instance.
CREATE TABLE tariffs (
    id             bigserial PRIMARY KEY,
    product_id     bigint NOT NULL REFERENCES products (id) ON DELETE CASCADE,
    tariff_code    text NOT NULL UNIQUE,
    fuel           text NOT NULL CHECK (fuel IN ('ELECTRICITY', 'GAS')),
    region         text NOT NULL DEFAULT '',
    payment_method text NOT NULL DEFAULT ''
);
CREATE INDEX tariffs_product_idx ON tariffs (product_id);

-- Rates are pence with up to four places.
CREATE TABLE unit_rates (
    id         bigserial PRIMARY KEY,
    tariff_id  bigint NOT NULL REFERENCES tariffs (id) ON DELETE CASCADE,
    rate_type  text NOT NULL,
    value      numeric(12,4) NOT NULL,
    valid_from date NOT NULL,
    valid_to   date,
    CHECK (valid_to IS NULL OR valid_to >= valid_from)
);
CREATE INDEX unit_rates_tariff_idx ON unit_rates (tariff_id);

CREATE TABLE standing_charges (
    id         bigserial PRIMARY KEY,
    tariff_id  bigint NOT NULL REFERENCES tariffs (id) ON DELETE CASCADE,
    value      numeric(12,4) NOT NULL,
    valid_from date NOT NULL,
    valid_to   date,
    CHECK (valid_to IS NULL OR valid_to >= valid_from)
);
CREATE INDEX standing_charges_tariff_idx ON standing_charges (tariff_id);

-- Agreements name a tariff (preferred) or a product.
ALTER TABLE agreements ALTER COLUMN product_code DROP NOT NULL, ADD COLUMN tariff_code text;

-- Meter data. Profile class and SSC are electricity settlement data; the
-- estimated annual consumption is kWh.
ALTER TABLE meter_points
    ADD COLUMN profile_class smallint CHECK (profile_class BETWEEN 0 AND 99),
    ADD COLUMN ssc text,
    ADD COLUMN estimated_annual_consumption numeric(14,2);

CREATE TABLE meters (
    id             bigserial PRIMARY KEY,
    account_id     bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    meter_point_id bigint NOT NULL REFERENCES meter_points (id) ON DELETE CASCADE,
    serial_number  text NOT NULL,
    UNIQUE (account_id, serial_number)
);
CREATE INDEX meters_meter_point_idx ON meters (meter_point_id);

CREATE TABLE meter_registers (
    id               bigserial PRIMARY KEY,
    meter_id         bigint NOT NULL REFERENCES meters (id) ON DELETE CASCADE,
    register_id      text NOT NULL,
    number_of_digits integer NOT NULL CHECK (number_of_digits BETWEEN 1 AND 12),
    rate_type        text NOT NULL DEFAULT '',
    UNIQUE (meter_id, register_id)
);

-- Opening (transfer) readings: one per register per date.
CREATE TABLE transfer_readings (
    id            bigserial PRIMARY KEY,
    meter_id      bigint NOT NULL REFERENCES meters (id) ON DELETE CASCADE,
    register_id   text NOT NULL,
    reading_date  date NOT NULL,
    reading_value numeric(14,2) NOT NULL CHECK (reading_value >= 0),
    reading_type  text NOT NULL DEFAULT '',
    UNIQUE (meter_id, register_id, reading_date),
    FOREIGN KEY (meter_id, register_id) REFERENCES meter_registers (meter_id, register_id) ON DELETE CASCADE
);

-- Priority services register entries of a customer.
CREATE TABLE customer_psr (
    id             bigserial PRIMARY KEY,
    customer_id    bigint NOT NULL REFERENCES account_customers (id) ON DELETE CASCADE,
    code           text NOT NULL,
    effective_from date,
    effective_to   date,
    CHECK (effective_to IS NULL OR effective_from IS NULL OR effective_to >= effective_from)
);
CREATE INDEX customer_psr_customer_idx ON customer_psr (customer_id);

-- +goose Down
DROP TABLE customer_psr;
DROP TABLE transfer_readings;
DROP TABLE meter_registers;
DROP TABLE meters;
ALTER TABLE meter_points DROP COLUMN estimated_annual_consumption, DROP COLUMN ssc, DROP COLUMN profile_class;
ALTER TABLE agreements DROP COLUMN tariff_code;
DROP TABLE standing_charges;
DROP TABLE unit_rates;
DROP TABLE tariffs;
DROP TABLE products;
ALTER TABLE api_keys DROP COLUMN scopes;
ALTER TABLE import_suppliers DROP COLUMN market, DROP COLUMN require_products;
