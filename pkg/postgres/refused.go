package postgres

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// DataRefused tells a database refusal of the data itself from trouble worth
// a retry. SQLSTATE class 22 (data exception) and class 23 (integrity
// constraint violation) say the values cannot be stored: the same request
// or job would fail the same way forever. It returns the partner-facing
// error (data_refused, naming the column or constraint, never SQL), or nil
// when err is anything else: outages, cancellations, our own guard
// (dataimport_assert, SQLSTATE DIA01, meaning a stale attempt) and the
// conflicts between our own writers listed in internalConflicts.
//
// Validation is meant to refuse all such data first (the schema-coverage
// test holds it to that); this is the last line of defence.
func DataRefused(err error) *dataimport.Error {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || len(pg.Code) != 5 {
		return nil
	}
	class := pg.Code[:2]
	if class != "22" && class != "23" {
		return nil
	}
	if internalConflicts[pg.ConstraintName] {
		return nil
	}
	var where []string
	switch {
	case pg.TableName != "" && pg.ColumnName != "":
		where = append(where, "column "+pg.TableName+"."+pg.ColumnName)
	case pg.TableName != "":
		where = append(where, "table "+pg.TableName)
	}
	if pg.ConstraintName != "" {
		where = append(where, "rule "+pg.ConstraintName)
	}
	detail := "The data passed validation but was refused when stored: " + refusalReason(pg.Code)
	if len(where) > 0 {
		detail += " (" + strings.Join(where, ", ") + ")"
	}
	return &dataimport.Error{Code: dataimport.CodeDataRefused, Domain: dataimport.DomainValidation,
		Detail: detail + ". Nothing was stored; correct the data, as sending it again unchanged will fail the same way."}
}

// internalConflicts are unique keys that only our own concurrent writers can
// collide on; a retry finds out what happened, so they are not the
// partner's data. (Partner-visible keys, such as transaction IDs, are
// validated or mapped to their own errors by the store.)
var internalConflicts = map[string]bool{
	"accounts_platform_account_number_key":                     true, // a drawn number taken; CreateAccount draws again
	"accounts_import_process_id_key":                           true, // two runs of one creation
	"accounts_supplier_id_external_account_number_key":         true, // two runs of one creation
	"import_attempts_pkey":                                     true, // the attempt's outcome was recorded meanwhile
	"import_processes_supplier_id_external_account_number_key": true, // a process staged concurrently
	"import_process_versions_pkey":                             true, // a version staged concurrently
}

// refusalReason says in a partner's words what a SQLSTATE of class 22 or 23
// means.
func refusalReason(code string) string {
	switch code {
	case "22001":
		return "a text is longer than its field allows"
	case "22003":
		return "a number is too large for its field"
	case "22007", "22008":
		return "a date or time is out of range"
	case "22021", "22P05":
		return "a text holds characters that cannot be stored"
	case "23502":
		return "a required value is missing"
	case "23503":
		return "a value refers to something that does not exist"
	case "23505":
		return "a value that must be unique is repeated"
	case "23514":
		return "the values break a rule"
	}
	if strings.HasPrefix(code, "22") {
		return "a value cannot be stored"
	}
	return "the values break a rule"
}
