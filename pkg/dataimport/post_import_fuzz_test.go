package dataimport

import (
	"bytes"
	"encoding/json"
	"path"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// Fuzz targets of the post-import bodies (notes, historical statements,
// payment instructions) and of the document-path rule they share. Common
// properties: no panic; a rejection is a parse_error without field errors or
// an invalid_payload whose errors all carry a code, an attr and a detail; an
// accepted body obeys the rules the store relies on and is accepted again
// unchanged when written back out.

var (
	fuzzNow     = time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC)
	fuzzToday   = DateOf(fuzzNow)
	fuzzVendors = []string{"GOCARDLESS", "STRIPE"}
)

func validateNotes(r *NotesRequest) []FieldError { return r.Validate(fuzzNow) }

func validateStatements(r *StatementsRequest) []FieldError { return r.Validate(fuzzToday) }

// checkRejection asserts the shape of every error a body can get: a parse
// error, or validationCode with well-formed field errors.
func checkRejection(t *testing.T, err error, validationCode string) {
	t.Helper()
	e, ok := AsError(err)
	if !ok {
		t.Fatalf("non-domain error %v", err)
	}
	switch e.Code {
	case CodeParseError:
		if len(e.Errors) != 0 || e.Detail == "" {
			t.Fatalf("parse error with field errors or no detail: %+v", e)
		}
	case validationCode:
		if len(e.Errors) == 0 {
			t.Fatal("validation failure without errors")
		}
		for _, fe := range e.Errors {
			checkFieldError(t, fe)
		}
	default:
		t.Fatalf("unexpected code %q", e.Code)
	}
}

// roundTrip writes an accepted request back out and decodes it again: it
// must be accepted and render identically.
func roundTrip[T any](t *testing.T, r *T, validate func(*T) []FieldError) {
	t.Helper()
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("marshal accepted request: %v", err)
	}
	again, err := Decode(out, CodeInvalidPayload, "Invalid payload.", validate)
	if err != nil {
		t.Fatalf("accepted request rejected when written back: %v\n%s", err, out)
	}
	if out2, _ := json.Marshal(again); !bytes.Equal(out, out2) {
		t.Fatalf("not idempotent:\n%s\n%s", out, out2)
	}
}

func checkAccount(t *testing.T, supplier, external string) {
	t.Helper()
	if supplier == "" || external == "" || utf8.RuneCountInString(external) > maxExternalAccountNumber {
		t.Fatalf("account %q/%q accepted", supplier, external)
	}
}

// FuzzNotes drives POST /notes/create/ bodies through Decode and
// NotesRequest.Validate. An accepted note has a body or a document path,
// only valid paths, a created_at (defaulted to now) and is_pinned, and is
// not unpinned before it was created.
func FuzzNotes(f *testing.F) {
	f.Add(readTestdata(f, "notes_sample.json"))
	f.Add([]byte(`{"import_supplier":"S","external_account_number":"E","notes":[{"body":"b"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := Decode(body, CodeInvalidPayload, "Invalid payload.", validateNotes)
		if err != nil {
			checkRejection(t, err, CodeInvalidPayload)
			return
		}
		checkAccount(t, r.ImportSupplier, r.ExternalAccountNumber)
		for i, n := range r.Notes {
			if !given(n.Body) && len(n.DocumentPaths) == 0 {
				t.Fatalf("note %d accepted without body or document path", i)
			}
			if n.Body != nil && utf8.RuneCountInString(*n.Body) > maxNoteBody {
				t.Fatalf("note %d: body of %d characters accepted", i, utf8.RuneCountInString(*n.Body))
			}
			for _, dp := range n.DocumentPaths {
				if _, ok := ValidateDocumentPath(dp.DocumentPath); !ok {
					t.Fatalf("note %d: document path %q accepted", i, dp.DocumentPath)
				}
			}
			if n.CreatedAt == nil || n.IsPinned == nil {
				t.Fatalf("note %d: defaults not filled: %+v", i, n)
			}
			if n.UnpinAt != nil && n.UnpinAt.Before(n.CreatedAt.Time) {
				t.Fatalf("note %d: unpin_at %s before created_at %s accepted", i, n.UnpinAt, n.CreatedAt)
			}
		}
		roundTrip(t, r, validateNotes)
	})
}

// FuzzStatements drives POST /historical-statements/create/ bodies through
// Decode and StatementsRequest.Validate. An accepted statement has a unique
// id, a period that does not end before it starts nor after today, no
// future issue date, a two-place gross amount that fits numeric(16,2) and,
// if given, a statement_path naming a PDF.
func FuzzStatements(f *testing.F) {
	f.Add(readTestdata(f, "statements_sample.json"))
	f.Add([]byte(`{"import_supplier":"S","external_account_number":"E","statements":[{"statement_id":"A","bill_period_from_date":"2025-01-01","bill_period_to_date":"2025-01-31"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := Decode(body, CodeInvalidPayload, "Invalid payload.", validateStatements)
		if err != nil {
			checkRejection(t, err, CodeInvalidPayload)
			return
		}
		checkAccount(t, r.ImportSupplier, r.ExternalAccountNumber)
		ids := map[string]bool{}
		for i, s := range r.Statements {
			if s.StatementID == "" || ids[s.StatementID] {
				t.Fatalf("statement %d: blank or repeated id %q accepted", i, s.StatementID)
			}
			ids[s.StatementID] = true
			if s.BillPeriodFromDate.IsZero() || s.BillPeriodToDate.IsZero() ||
				s.BillPeriodToDate.Before(s.BillPeriodFromDate) || s.BillPeriodToDate.After(fuzzToday) {
				t.Fatalf("statement %d: period %s..%s accepted", i, s.BillPeriodFromDate, s.BillPeriodToDate)
			}
			if s.IssuedDate != nil && s.IssuedDate.After(fuzzToday) {
				t.Fatalf("statement %d: issued_date %s accepted", i, s.IssuedDate)
			}
			if g := s.GrossAmount; g != nil && (significantPlaces(g.Decimal) > 2 || g.Abs().Cmp(maxStoredMoney) >= 0) {
				t.Fatalf("statement %d: gross_amount %s accepted", i, g.Decimal)
			}
			if p := s.StatementPath; p != nil {
				if _, ok := ValidatePDFDocumentPath(*p); !ok {
					t.Fatalf("statement %d: statement_path %q accepted", i, *p)
				}
			}
		}
		roundTrip(t, r, validateStatements)
	})
}

// FuzzPaymentInstruction drives POST /payment-instruction/create/ bodies
// through Decode and the validator for two configured vendors. An accepted
// request names a configured vendor (exact spelling), CARD or DIRECT_DEBIT,
// and a reference of one token that fits; with no vendor configured nothing
// is accepted.
func FuzzPaymentInstruction(f *testing.F) {
	f.Add([]byte(`{"import_supplier": "DEMO", "external_account_number": "EXT-1", "vendor": "STRIPE", "reference": "pm_123", "type": "CARD"}`))
	f.Add([]byte(`{"import_supplier": "DEMO", "external_account_number": "EXT-1", "vendor": "GOCARDLESS", "reference": "MD123", "type": "DIRECT_DEBIT"}`))
	validate := PaymentInstructionValidator(fuzzVendors)
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := Decode(body, CodeInvalidPayload, "Invalid payload.", PaymentInstructionValidator(nil)); err == nil {
			t.Fatal("accepted with no vendor configured")
		} else {
			checkRejection(t, err, CodeInvalidPayload)
		}
		r, err := Decode(body, CodeInvalidPayload, "Invalid payload.", validate)
		if err != nil {
			checkRejection(t, err, CodeInvalidPayload)
			return
		}
		checkAccount(t, r.ImportSupplier, r.ExternalAccountNumber)
		if utf8.RuneCountInString(r.ImportSupplier) > maxSupplierCode {
			t.Fatalf("import_supplier %q accepted", r.ImportSupplier)
		}
		if !slices.Contains(fuzzVendors, r.Vendor) || !slices.Contains(PaymentInstructionTypes, r.Type) {
			t.Fatalf("vendor %q type %q accepted", r.Vendor, r.Type)
		}
		if r.Reference == "" || utf8.RuneCountInString(r.Reference) > maxPaymentReference ||
			strings.ContainsFunc(r.Reference, func(c rune) bool { return unicode.IsControl(c) || unicode.IsSpace(c) }) {
			t.Fatalf("reference %q accepted", r.Reference)
		}
		roundTrip(t, r, validate)
	})
}

// FuzzDocumentPath checks the one document-path rule. A path it accepts
// stays inside the supplier's root: relative, no "." / ".." (or empty)
// segments, no backslash, no control character, at most 1024 characters,
// and already in clean form. A rejection always carries
// invalid_document_path and a human detail. The PDF variant accepts only
// what the plain rule accepts, ending in ".pdf".
func FuzzDocumentPath(f *testing.F) {
	for _, p := range []string{"statements/EXT-0001/2025-05.pdf", "../x", "a/./b", "/etc/passwd", `a\b`, "a//b", "x\x00y", ".pdf"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		code, ok := ValidateDocumentPath(p)
		if !ok {
			if code != CodeInvalidDocumentPath || DocumentPathProblem(p, false) == "" {
				t.Fatalf("rejected %q with code %q, detail %q", p, code, DocumentPathProblem(p, false))
			}
		} else {
			checkAcceptedPath(t, p, code)
		}
		pcode, pok := ValidatePDFDocumentPath(p)
		switch {
		case !pok && (pcode != CodeInvalidDocumentPath || DocumentPathProblem(p, true) == ""):
			t.Fatalf("PDF rule rejected %q with code %q, detail %q", p, pcode, DocumentPathProblem(p, true))
		case pok && (!ok || !strings.HasSuffix(strings.ToLower(p), ".pdf") || strings.HasSuffix(p, "/.pdf") || strings.EqualFold(p, ".pdf")):
			t.Fatalf("PDF rule accepted %q (plain rule ok=%v)", p, ok)
		}
	})
}

func checkAcceptedPath(t *testing.T, p, code string) {
	t.Helper()
	if code != "" {
		t.Fatalf("accepted %q with code %q", p, code)
	}
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, `\`) || utf8.RuneCountInString(p) > maxDocumentPath {
		t.Fatalf("accepted %q", p)
	}
	if strings.ContainsFunc(p, unicode.IsControl) || strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		t.Fatalf("accepted %q with a control character", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			t.Fatalf("accepted %q with segment %q", p, seg)
		}
	}
	if path.Clean(p) != p || !strings.HasPrefix(path.Join("root", p), "root/") {
		t.Fatalf("accepted %q, which leaves the root", p)
	}
}
