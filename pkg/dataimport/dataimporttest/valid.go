package dataimporttest

import (
	"fmt"
	"strings"
	"time"
)

// The bodies below pass every rule, so nothing stops early: every item is
// bound, validated, normalised, returned or stored. They are the largest
// legitimate requests, built with every array at its maximum (while the
// byte budget lasts) and strings near their maximum length.

// ValidAccounts returns accounts of supplier/external that validate, each
// filling limit bytes with a different array first.
func ValidAccounts(supplier, external string, limit int) []Body {
	sections := map[string]section{
		"customers":                      {50, customer},
		"supply_addresses":               {100, supplyAddress},
		"metadata":                       {100, func(i int) string { return fmt.Sprintf(`{"key":"k%d","value":%q}`, i, text(200)) }},
		"references":                     {100, func(i int) string { return fmt.Sprintf(`{"namespace":"ns","value":"ref-%d"}`, i) }},
		"notes":                          {1000, note},
		"current_statement_transactions": {100, supplyCharge},
	}
	// Customers (small) come first and one supply address must still fit
	// after the focused array, or the account would not validate.
	const keep = 100 << 10
	var out []Body
	for _, focus := range []string{"current_statement_transactions", "supply_addresses", "notes"} {
		out = append(out, Body{Name: "valid-max:" + focus, Make: func() []byte {
			w := &writer{limit: limit, buf: make([]byte, 0, limit)}
			w.raw(fmt.Sprintf(`{"import_supplier":%q,"external_account_number":%q,"sales_channel":"DIRECT","billing_name":%q,`+
				`"billing_address1":%q,"billing_postcode":"SW1A 2AA","transfer_balance":"-42.50"`, supplier, external, text(255), text(255)))
			w.array("customers", sections["customers"], 0)
			w.array(focus, sections[focus], keep)
			for _, name := range []string{"supply_addresses", "metadata", "references", "current_statement_transactions", "notes"} {
				if name != focus {
					w.array(name, sections[name], 0)
				}
			}
			w.raw("}")
			return w.buf
		}})
	}
	return out
}

// ValidNotes is the largest notes request.
func ValidNotes(supplier, external string, limit int) Body {
	return postImport(supplier, external, limit, "notes", section{1000, note})
}

// ValidTransactions is the largest transactions request: supply charges
// with every line item, unit and tax item.
func ValidTransactions(supplier, external string, limit int) Body {
	return postImport(supplier, external, limit, "transactions", section{500, supplyCharge})
}

// ValidStatements is the largest historical-statements request.
func ValidStatements(supplier, external string, limit int) Body {
	return postImport(supplier, external, limit, "statements", section{1000, func(i int) string {
		return fmt.Sprintf(`{"statement_id":"S-%d-%s","bill_period_from_date":"2024-01-01","bill_period_to_date":"2024-01-31",`+
			`"issued_date":"2024-02-01","number":%q,"gross_amount":"123.45","statement_path":"statements/%d/%s.pdf"}`,
			i, text(100), text(255), i, text(200))
	}})
}

func postImport(supplier, external string, limit int, name string, s section) Body {
	return Body{Name: "valid-max:" + name, Make: func() []byte {
		w := &writer{limit: limit, buf: make([]byte, 0, limit)}
		w.raw(fmt.Sprintf(`{"import_supplier":%q,"external_account_number":%q`, supplier, external))
		w.array(name, s, 0)
		w.raw("}")
		return w.buf
	}}
}

// section is an array: its maximum and its i-th item.
type section struct {
	max  int
	item func(i int) string
}

type writer struct {
	buf   []byte
	limit int
}

func (w *writer) raw(s string) { w.buf = append(w.buf, s...) }

// array writes ,"name":[…] with as many items as fit, keeping room for
// the closing brackets and keep bytes more.
func (w *writer) array(name string, s section, keep int) {
	head := fmt.Sprintf(`,%q:[`, name)
	if len(w.buf)+len(head)+2+1+keep > w.limit {
		return
	}
	w.raw(head)
	for i := range s.max {
		item := s.item(i)
		if len(w.buf)+len(item)+1+2+keep > w.limit {
			break
		}
		if i > 0 {
			w.raw(",")
		}
		w.raw(item)
	}
	w.raw("]")
}

// text is n characters of text (two bytes each in UTF-8).
func text(n int) string { return strings.Repeat("é", n) }

func customer(i int) string {
	return fmt.Sprintf(`{"given_name":%q,"family_name":"Smith-%d","title":"Dr","salutation":%q,"email":"c%d@example.co.uk",`+
		`"mobile":"07400 123456","landline":"020 7946 0018","date_of_birth":"1980-04-12",`+
		`"customer_preferences":{"opted_into_sms":true,"opted_into_updates":true}}`, text(250), i, text(255), i)
}

// supplyAddress has every meter point, each with every agreement, the
// agreements one day each and consecutive.
func supplyAddress(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"supply_address1":%q,"supply_address2":%q,"supply_postcode":"SW1A 2AA","meter_points":[`, text(255), text(255))
	for m := range 10 {
		if m > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"mpxn":"%d","fuel":"ELECTRICITY","supply_start_date":"2020-01-01","agreements":[`, 1_000_000_000+i*100+m)
		day := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		for a := range 20 {
			if a > 0 {
				b.WriteByte(',')
			}
			d := day.AddDate(0, 0, a).Format(time.DateOnly)
			fmt.Fprintf(&b, `{"product_code":"P-%d","valid_from":%q,"valid_to":%q}`, a, d, d)
		}
		b.WriteString("]}")
	}
	b.WriteString("]}")
	return b.String()
}

func note(i int) string {
	var paths []string
	for p := range 20 {
		paths = append(paths, fmt.Sprintf(`{"document_path":"notes/%d/%d-%s.pdf"}`, i, p, strings.Repeat("x", 40)))
	}
	return fmt.Sprintf(`{"body":"%d %s","document_paths":[%s],"created_at":"2025-01-01T00:00:00Z","is_pinned":true,"unpin_at":"2026-01-01T00:00:00Z"}`,
		i, strings.Repeat("é", 1000), strings.Join(paths, ","))
}

// supplyCharge has every line item (each with every unit) and every tax
// item, and an amount equal to their sum.
func supplyCharge(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"transaction_id":"T-%d","transaction_date":"2025-06-10","amount":"307.50","type":"SUPPLY_CHARGE",`+
		`"product_code":"P-1","display_note":%q,"line_items":[`, i, text(255))
	units := strings.TrimSuffix(strings.Repeat("1.5,", 10), ",")
	for l := range 20 {
		if l > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"rate_band":"CONSUMPTION_STANDARD","start_date":"2025-06-01","end_date":"2025-06-30",`+
			`"number_of_units":30,"net_amount":"15.00","price_per_unit":0.5,"units":[%s]}`, units)
	}
	b.WriteString(`],"tax_items":[`)
	for t := range 10 {
		if t > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"amount":"0.75","tax_type":"VAT","value_taxed":"15.00","rate":0.05,"unit_type":"PROPORTION"}`)
	}
	b.WriteString("]}")
	return b.String()
}
