package dataimport

import (
	"errors"
	"fmt"
)

// Top-level error codes (CONTRACT §4). They are part of the wire contract:
// partners branch on them, so never rename one.
const (
	CodeAccountFailedValidation  = "account_failed_validation"
	CodeInvalidPayload           = "invalid_payload"
	CodeParseError               = "parse_error"
	CodeAccountAlreadyImported   = "account_already_imported"
	CodeAccountMarkedSkipped     = "account_marked_skipped"
	CodeSupplierNotFound         = "import_supplier_not_found"
	CodeSupplierNotOngoing       = "import_supplier_migration_not_ongoing"
	CodeImportInProgress         = "account_import_in_progress"
	CodeProcessDoesNotExist      = "import_process_does_not_exist"
	CodeTeamDoesNotExist         = "operations_team_name_does_not_exist"
	CodeDryRunRolledBack         = "dry_run_rolled_back"
	CodeNotAuthenticated         = "not_authenticated"
	CodeAuthenticationFailed     = "authentication_failed"
	CodeTokenExpired             = "token_expired"
	CodeNotFound                 = "not_found"
	CodeMethodNotAllowed         = "method_not_allowed"
	CodeRequestTooLarge          = "request_too_large"
	CodeUnsupportedMediaType     = "unsupported_media_type"
	CodeConcurrencyLimitExceeded = "concurrency_limit_exceeded"
	CodeThrottled                = "throttled"
	CodeServerError              = "server_error"
	CodeServiceUnavailable       = "service_unavailable"
	CodeNonFieldErrors           = "non_field_errors" // attr used for whole-object errors
	CodeInvalidAPIKey            = "invalid_api_key"  // GraphQL extensions.errorCode
	CodeInvalidRefreshToken      = "invalid_refresh_token"
	CodeUnknownField             = "unknown_field"
	CodeRequired                 = "required"
	CodeNull                     = "null"
	CodeBlank                    = "blank"
	CodeInvalid                  = "invalid"
	CodeInvalidChoice            = "invalid_choice"
	CodeMaxLength                = "max_length"
	CodeInvalidDate              = "invalid_date"
	CodeInvalidDatetime          = "invalid_datetime"
	CodeInvalidDecimal           = "invalid_decimal"
	CodeMaxDecimalPlaces         = "max_decimal_places"
	CodeInvalidEmail             = "invalid_email"
	CodeInvalidPhoneNumber       = "invalid_phone_number"
	CodeDuplicateTransactionIDs  = "duplicate_transaction_ids"
	CodeInvalidDocumentPath      = "invalid_document_path"
)

// FieldError is one entry of the "errors" array of a validation error body.
// Attr is the dot path to the offending input (customers.0.landline) or
// "non_field_errors" for rules about the whole object.
type FieldError struct {
	Detail string `json:"detail"`
	Code   string `json:"code"`
	Attr   string `json:"attr"`
}

// Error is the domain error every layer returns to callers. The HTTP layer
// renders it as the one error envelope and picks the status from Code.
type Error struct {
	Code   string       `json:"code"`
	Detail string       `json:"detail"`
	Errors []FieldError `json:"errors,omitempty"`
	// Domain says where an attempt's error came from (validation,
	// scheduling, processing, vendor); kept with latest_error.
	Domain string `json:"domain,omitempty"`
	// Extra holds additional top-level body fields, e.g. the two account
	// numbers of account_already_imported.
	Extra map[string]any `json:"-"`
	// RetryAfterSeconds is sent as Retry-After when > 0 (429, 503).
	RetryAfterSeconds int `json:"-"`
}

func (e *Error) Error() string {
	if len(e.Errors) > 0 {
		return fmt.Sprintf("%s: %s (%d field errors, first %s at %q)", e.Code, e.Detail, len(e.Errors), e.Errors[0].Code, e.Errors[0].Attr)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Detail)
}

// Errorf builds a domain error with a formatted detail.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// ValidationError wraps field errors under a top-level code.
func ValidationError(code, detail string, errs []FieldError) *Error {
	return &Error{Code: code, Detail: detail, Errors: errs}
}

// AsError extracts a domain error from err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// ErrorCode returns the domain code of err, or "" for non-domain errors.
func ErrorCode(err error) string {
	if e, ok := AsError(err); ok {
		return e.Code
	}
	return ""
}

// Field codes added by the account and post-import validators (CONTRACT §5,
// §7). Same stability promise as above: append only.
const (
	CodeMaxWholeDigits                       = "max_whole_digits"
	CodeNullCharactersNotAllowed             = "null_characters_not_allowed"
	CodeDateInFuture                         = "date_in_future"
	CodeInvalidAddress                       = "invalid_address"
	CodeCustomerWithUnknownOccupier          = "customer_with_unknown_occupier"
	CodeOccupierAccountWithMultipleAddresses = "occupier_account_with_multiple_supply_addresses"
	CodeCustomerFamilyNameRequired           = "customer_family_name_required"
	CodeCustomerNamedTheOccupier             = "customer_may_not_be_named_the_occupier"
	CodeMetadataHasDuplicateKeys             = "metadata_has_duplicate_keys"
	CodeDuplicateReferences                  = "duplicate_references"
	CodeDuplicateMPXN                        = "duplicate_mpxn"
	CodeStartDateLaterThanEndDate            = "start_date_later_than_end_date"
	CodeGapsOrOverlapsInAgreementDates       = "gaps_or_overlaps_in_agreement_dates"
	CodeNoteBodyOrDocumentPathNotFound       = "note_body_or_document_path_not_found"
	CodeNoteUnpinAtEarlierThanCreationDate   = "note_unpin_at_earlier_than_creation_date"
	CodeAmountNotPositive                    = "amount_must_be_positive"
	CodeSupplyChargeAmountMismatch           = "supply_charge_amount_mismatch"
	CodeLineItemNetAmountMismatch            = "line_item_net_amount_mismatch"
	CodePathDoesNotExistInFileStore          = "path_does_not_exist_in_file_store"
	CodeHistoricalStatementPeriodEndInFuture = "historical_statement_period_end_in_future"
	CodeHistoricalStatementAlreadyExists     = "historical_statement_already_exists"
)

// CodeTransactionImportError is the top-level code of the transactions
// endpoint's 400 for a transaction that could not be stored; the body also
// carries the interface's own status, error_detail and transaction_data.
const CodeTransactionImportError = "transaction_import_error"

// Codes for data that validation must refuse because the database could not
// store it (numeric(16,2) columns; a balance is one).
const (
	// CodeBalanceOutOfRange: the running balance after a transaction would
	// not fit the stored range.
	CodeBalanceOutOfRange = "balance_out_of_range"
	// CodeDataRefused is the last line of defence: data that passed
	// validation was refused by the database (a rule validation lacks).
	// Sending it again unchanged fails the same way.
	CodeDataRefused = "data_refused"
)

// CodeTooManyErrors ends an error list cut at MaxReportedErrors.
const CodeTooManyErrors = "too_many_errors"

// Idempotency-Key codes (CONTRACT §12): the header is malformed (400), the
// key was used for another request (422), or the key's first request is
// still running (409).
const (
	CodeInvalidIdempotencyKey = "invalid_idempotency_key"
	CodeIdempotencyKeyReused  = "idempotency_key_reused"
	CodeIdempotencyKeyInUse   = "idempotency_key_in_use"
)
