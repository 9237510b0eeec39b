-- The account-creation transaction checks, in the same round trip as its
-- writes, that its attempt is still the process's current one. A failed
-- check must abort the transaction, and plain SQL cannot raise an error, so
-- this function does it with a SQLSTATE of our own (DIA01).

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION dataimport_assert(ok boolean, msg text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF ok IS NOT TRUE THEN
    RAISE EXCEPTION USING ERRCODE = 'DIA01', MESSAGE = msg;
  END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION dataimport_assert(boolean, text);
