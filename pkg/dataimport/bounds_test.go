package dataimport_test

import (
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/dataimport/dataimporttest"
)

// maxBodyBytes is MAX_BODY_BYTES' default.
const maxBodyBytes = 5 << 20

// maxDecodeAlloc bounds the heap one decode and validation may allocate
// for any body within maxBodyBytes. The worst measured is about 16 MB (500
// supply charges with every line item, unit and tax item); before array maxima and one capped
// error list, {"customers":[{},{},…]} alone allocated 2.9 GB.
const maxDecodeAlloc = 48 << 20

type entryPoint struct {
	typ    reflect.Type
	valid  []dataimporttest.Body
	decode func([]byte) error
}

func entryPoints() map[string]entryPoint {
	now := time.Date(2025, 6, 15, 9, 0, 0, 0, time.UTC)
	rules := dataimport.AccountRules{PhoneRegion: "GB", Today: dataimport.DateOf(now)}
	const sup, ext = "DEMO_ENERGY", "EXT-1"
	return map[string]entryPoint{
		"account": {reflect.TypeFor[dataimport.Account](), dataimporttest.ValidAccounts(sup, ext, maxBodyBytes),
			func(b []byte) error { _, err := dataimport.DecodeAccount(b, rules); return err }},
		"notes": {reflect.TypeFor[dataimport.NotesRequest](), []dataimporttest.Body{dataimporttest.ValidNotes(sup, ext, maxBodyBytes)},
			func(b []byte) error {
				_, err := dataimport.Decode(b, dataimport.CodeInvalidPayload, "x", func(r *dataimport.NotesRequest) []dataimport.FieldError { return r.Validate(now) })
				return err
			}},
		"transactions": {reflect.TypeFor[dataimport.TransactionsRequest](), []dataimporttest.Body{dataimporttest.ValidTransactions(sup, ext, maxBodyBytes)},
			func(b []byte) error {
				_, err := dataimport.Decode(b, dataimport.CodeInvalidPayload, "x", (*dataimport.TransactionsRequest).Validate)
				return err
			}},
		"statements": {reflect.TypeFor[dataimport.StatementsRequest](), []dataimporttest.Body{dataimporttest.ValidStatements(sup, ext, maxBodyBytes)},
			func(b []byte) error {
				_, err := dataimport.Decode(b, dataimport.CodeInvalidPayload, "x", func(r *dataimport.StatementsRequest) []dataimport.FieldError { return r.Validate(rules.Today) })
				return err
			}},
		"products": {reflect.TypeFor[dataimport.ProductsRequest](), nil,
			func(b []byte) error { _, err := dataimport.DecodeProducts(b); return err }},
		"payment instruction": {reflect.TypeFor[dataimport.PaymentInstructionRequest](), nil,
			func(b []byte) error {
				_, err := dataimport.Decode(b, dataimport.CodeInvalidPayload, "x", dataimport.PaymentInstructionValidator([]string{"STRIPE"}))
				return err
			}},
	}
}

// Not a timing test: the heap allocated is deterministic enough to bound,
// with a wide margin, so that memory amplification coming back fails here.
// Every hostile body of every request type, and the largest valid ones.
func TestWorstBodiesAllocationBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes a few hundred 5 MiB bodies")
	}
	for name, ep := range entryPoints() {
		for _, body := range append(dataimporttest.WorstBodies(ep.typ, maxBodyBytes), ep.valid...) {
			b := body.Make()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := ep.decode(b)
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > maxDecodeAlloc {
				t.Errorf("%s %s (%d bytes): allocated %.1f MB, bound %d MB", name, body.Name, len(b), float64(alloc)/1e6, maxDecodeAlloc>>20)
			}
			if e, ok := dataimport.AsError(err); err != nil && (!ok || len(e.Errors) > dataimport.MaxReportedErrors+1) {
				t.Errorf("%s %s: %v", name, body.Name, err)
			}
			if err != nil && len(body.Name) > 9 && body.Name[:9] == "valid-max" {
				t.Errorf("%s %s: the largest valid body was refused: %.500v", name, body.Name, err)
			}
		}
	}
}

// The reproduction of issue 15: a 5 MiB array of empty customers took 20 s
// of CPU and 1.3 GiB of heap. Now the array stops at its maximum.
func TestEmptyCustomersBodyIsCheap(t *testing.T) {
	body := make([]byte, 0, maxBodyBytes)
	body = append(body, `{"customers":[{}`...)
	for len(body) < maxBodyBytes-10 {
		body = append(body, `,{}`...)
	}
	body = append(body, "]}"...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := dataimport.DecodeAccount(body, dataimport.AccountRules{PhoneRegion: "GB"})
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > maxDecodeAlloc {
		t.Errorf("allocated %.1f MB, bound %d MB", float64(alloc)/1e6, maxDecodeAlloc>>20)
	}
	e, _ := dataimport.AsError(err)
	if e == nil || len(e.Errors) > dataimport.MaxReportedErrors+1 {
		t.Fatalf("got %v", err)
	}
	found := false
	for _, fe := range e.Errors {
		found = found || (fe.Attr == "customers" && fe.Code == dataimport.CodeMaxItems)
	}
	if !found {
		t.Errorf("no max_items on customers in %d errors", len(e.Errors))
	}
}
