package dataimport

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

const (
	maxDocumentPath = 1024 // CONTRACT §7
	// maxNoteBody: the 255 default is for account fields; migrated notes
	// (call transcripts, e-mails) are routinely longer. 100k characters is
	// generous while still bounding one note.
	maxNoteBody = 100_000
)

// ValidateNote checks one note (CONTRACT §7, interface §2.4) found at path
// ("notes.0") and normalises it: is_pinned defaults to false and, when now
// is non-zero, a missing created_at becomes now (UTC, whole seconds).
func ValidateNote(n *Note, path string, now time.Time) []FieldError {
	c := &collector{}
	validateNote(c, n, objectAt(path), now)
	return c.list()
}

func validateNote(c *collector, n *Note, it item, now time.Time) {
	if n.Body != nil {
		c.maxLength(it.field("body"), *n.Body, maxNoteBody)
	}
	if !given(n.Body) && len(n.DocumentPaths) == 0 {
		c.add(it.String(), CodeNoteBodyOrDocumentPathNotFound, "A note needs a body or at least one document path.")
	}
	if len(n.DocumentPaths) > 0 {
		paths := it.field("document_paths").String()
		for i, dp := range n.DocumentPaths {
			if c.full() {
				break
			}
			c.documentPath(itemOf(paths, i).field("document_path"), dp.DocumentPath, false)
		}
	}
	if n.CreatedAt == nil && !now.IsZero() {
		n.CreatedAt = ptr(NewDateTime(now))
	}
	if n.IsPinned == nil {
		n.IsPinned = ptr(false)
	}
	if n.UnpinAt != nil {
		created := n.CreatedAt
		if created == nil && !now.IsZero() {
			created = ptr(NewDateTime(now))
		}
		if created != nil && n.UnpinAt.Before(created.Time) {
			c.addAt(it.field("unpin_at"), CodeNoteUnpinAtEarlierThanCreationDate, "unpin_at may not be earlier than created_at.")
		}
	}
}

// ValidateDocumentPath applies the CONTRACT §7 path rules. It returns the
// error code to report (CodeInvalidDocumentPath) and ok=false when p is not
// acceptable. Existence in the object store is checked elsewhere (I/O).
func ValidateDocumentPath(p string) (code string, ok bool) {
	if documentPathProblem(p) != "" {
		return CodeInvalidDocumentPath, false
	}
	return "", true
}

// ValidatePDFDocumentPath is ValidateDocumentPath plus the rule of fields
// that name a PDF (statement_path): the last segment is a file name ending
// ".pdf" (any case: exports from Windows systems often say ".PDF").
func ValidatePDFDocumentPath(p string) (code string, ok bool) {
	if DocumentPathProblem(p, true) != "" {
		return CodeInvalidDocumentPath, false
	}
	return "", true
}

// DocumentPathProblem is the human detail for a refused path (pdf: the
// field must name a PDF), or "" when p is acceptable.
func DocumentPathProblem(p string, pdf bool) string {
	if problem := documentPathProblem(p); problem != "" || !pdf {
		return problem
	}
	name := p[strings.LastIndexByte(p, '/')+1:]
	if len(name) <= len(".pdf") || !strings.EqualFold(name[len(name)-len(".pdf"):], ".pdf") {
		return `Document path must name a PDF file (ending ".pdf").`
	}
	return ""
}

// documentPath reports a refused document path at attr.
func (c *collector) documentPath(a attr, p string, pdf bool) {
	if problem := DocumentPathProblem(p, pdf); problem != "" {
		c.addAt(a, CodeInvalidDocumentPath, problem)
	}
}

// documentPathProblem says what is wrong with p, or "" when it is fine. The
// rules keep a path inside the supplier's root: relative, no "." / ".."
// segments, no backslashes (which some stores treat as separators). Empty
// segments ("a//b", "a/") are refused too: they name no file.
func documentPathProblem(p string) string {
	switch {
	case p == "":
		return "Document path may not be empty."
	case utf8.RuneCountInString(p) > maxDocumentPath:
		return fmt.Sprintf("Document path may not be longer than %d characters.", maxDocumentPath)
	case strings.HasPrefix(p, "/"):
		return "Document path must be relative (no leading /)."
	case strings.ContainsRune(p, '\\'):
		return `Document path may not contain "\".`
	case strings.ContainsFunc(p, unicode.IsControl):
		return "Document path may not contain control characters."
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case ".", "..":
			return `Document path may not contain "." or ".." segments.`
		case "":
			return "Document path may not contain empty segments."
		}
	}
	return ""
}

// ValidateTransactions checks transactions found at path
// ("transactions" or "current_statement_transactions") per CONTRACT §7 and
// reports them all. All arithmetic is exact (decimal).
func ValidateTransactions(txs []Transaction, path string) []FieldError {
	c := &collector{}
	validateTransactions(c, txs, path)
	return c.list()
}

func validateTransactions(c *collector, txs []Transaction, path string) {
	firstUse := map[string]attr{} // transaction_id -> attr of its first use
	for i := range txs {
		if c.full() {
			return
		}
		tx := &txs[i]
		p := itemOf(path, i)
		id := p.field("transaction_id")
		c.requiredString(id, tx.TransactionID, defaultMaxLength)
		c.unique(id, tx.TransactionID, firstUse, CodeDuplicateTransactionIDs, "Transaction ID %q is also used by %s.")
		if !tx.Amount.IsPositive() {
			c.addAt(p.field("amount"), CodeAmountNotPositive, "Ensure this value is greater than 0.")
		} else {
			c.money(p.field("amount"), tx.Amount)
			c.storedMoney(p.field("amount"), tx.Amount)
		}
		choice(c, p.field("type"), tx.Type, TransactionTypes)
		c.optionalString(p.field("display_note"), tx.DisplayNote, defaultMaxLength)
		c.optionalString(p.field("note"), tx.Note, defaultMaxLength)
		c.optionalString(p.field("reference"), tx.Reference, defaultMaxLength)
		c.optionalString(p.field("product_code"), tx.ProductCode, defaultMaxLength)
		if tx.Reason != nil {
			choice(c, p.field("reason"), *tx.Reason, TransactionReasons)
		}
		if tx.PaymentType != nil {
			choice(c, p.field("payment_type"), *tx.PaymentType, PaymentTypes)
		}
		if len(tx.LineItems) > 0 {
			lineItems := p.field("line_items").String()
			for k := range tx.LineItems {
				if c.full() {
					return
				}
				validateLineItem(c, &tx.LineItems[k], itemOf(lineItems, k))
			}
		}
		if len(tx.TaxItems) > 0 {
			taxItems := p.field("tax_items").String()
			for k := range tx.TaxItems {
				validateTaxItem(c, &tx.TaxItems[k], itemOf(taxItems, k))
			}
		}
		validateTransactionType(c, tx, p)
	}
}

// validateTransactionType applies the per-type requirements of CONTRACT §7.
func validateTransactionType(c *collector, tx *Transaction, p item) {
	requiredFor := func(field string, isNil bool) {
		if isNil {
			c.addAt(p.field(field), CodeRequired, fmt.Sprintf("This field is required for %s transactions.", tx.Type))
		}
	}
	switch tx.Type {
	case TransactionCharge, TransactionCredit:
		requiredFor("reason", tx.Reason == nil)
	case TransactionPayment, TransactionRepayment:
		requiredFor("payment_type", tx.PaymentType == nil)
	case TransactionSupplyCharge:
		if tx.ProductCode == nil || *tx.ProductCode == "" {
			requiredFor("product_code", true)
		}
		if len(tx.LineItems) == 0 {
			c.addAt(p.field("line_items"), CodeRequired, "A SUPPLY_CHARGE needs at least one line item.")
			return
		}
		// amount = Σ line net_amount + Σ tax amount, exactly.
		sum := decimal.Zero
		for _, li := range tx.LineItems {
			sum = sum.Add(li.NetAmount.Decimal)
		}
		for _, ti := range tx.TaxItems {
			sum = sum.Add(ti.Amount.Decimal)
		}
		if tx.Amount.IsPositive() && !tx.Amount.Equal(sum) {
			c.addAt(p.field("amount"), CodeSupplyChargeAmountMismatch, fmt.Sprintf(
				"amount %s must equal the line items' net_amount plus the tax items' amount (%s).",
				tx.Amount.StringFixed(2), sum.StringFixed(2)))
		}
	}
}

func validateLineItem(c *collector, li *LineItem, p item) {
	if li.RateBand != nil {
		choice(c, p.field("rate_band"), *li.RateBand, RateBands)
	}
	if !li.StartDate.IsZero() && !li.EndDate.IsZero() && li.EndDate.Before(li.StartDate) {
		c.addAt(p.field("end_date"), CodeStartDateLaterThanEndDate, "end_date may not be before start_date.")
	}
	c.money(p.field("net_amount"), li.NetAmount)
	if li.PricePerUnit == nil {
		return
	}
	if li.NumberOfUnits == nil {
		c.addAt(p.field("number_of_units"), CodeRequired, "number_of_units is required when price_per_unit is given.")
		return
	}
	// Rounded half away from zero to 2 places, the usual billing rounding.
	want := li.NumberOfUnits.Mul(*li.PricePerUnit).Round(moneyDecimalPlaces)
	if !li.NetAmount.Equal(want) {
		c.addAt(p.field("net_amount"), CodeLineItemNetAmountMismatch, fmt.Sprintf(
			"net_amount must equal number_of_units × price_per_unit rounded to 2 places (%s).", want.StringFixed(2)))
	}
}

func validateTaxItem(c *collector, ti *TaxItem, p item) {
	c.money(p.field("amount"), ti.Amount)
	choice(c, p.field("tax_type"), ti.TaxType, TaxTypes)
	c.money(p.field("value_taxed"), ti.ValueTaxed)
	choice(c, p.field("unit_type"), ti.UnitType, UnitTypes)
}
