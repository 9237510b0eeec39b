package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"
)

// A supplier an operator Paused refuses new work with
// import_supplier_migration_not_ongoing, and holds what it had accepted
// (CONTRACT §14). The migrator waits a Paused supplier out, up to
// --paused-wait per account (or per bulk part), trying again every
// pausedRetry; Complete is final (the account fails with that code).

const (
	codeNotOngoing   = "import_supplier_migration_not_ongoing"
	pausedRetry      = 5 * time.Second
	defaultPauseWait = 30 * time.Minute
)

// supplierPaused tells from an import_supplier_migration_not_ongoing
// answer whether the supplier is Paused (worth waiting) rather than
// Complete. The envelope has no status field, so the detail's wording
// (dataimport.Supplier.NotOngoingError: "… is Paused; …") decides.
func supplierPaused(code, detail string) bool {
	return code == codeNotOngoing && strings.Contains(detail, " is Paused;")
}

// errSupplierPaused: a bulk part's upload was refused because its supplier is Paused.
var errSupplierPaused = errors.New("supplier paused")

// pausedBody reports whether an error answer's body says the supplier is Paused.
func pausedBody(body []byte) bool {
	if !bytes.Contains(body, []byte(codeNotOngoing)) {
		return false
	}
	var e struct{ Code, Detail string }
	return json.Unmarshal(body, &e) == nil && supplierPaused(e.Code, e.Detail)
}

// whilePaused runs try until its answer is not "Paused", waiting
// pausedRetry between tries, up to limit in all: then the last answer
// stands. A stop or ctx ends the wait with the last answer.
func whilePaused[T any](ctx context.Context, stop <-chan struct{}, log *slog.Logger, limit time.Duration, paused func(T) bool, try func() T) T {
	for waited := time.Duration(0); ; waited += pausedRetry {
		out := try()
		if !paused(out) || waited >= limit {
			return out
		}
		log.InfoContext(ctx, "supplier is Paused; waiting for it to be Ongoing", "waited", waited, "limit", limit)
		if sleep(ctx, stop, pausedRetry) != nil {
			return out
		}
	}
}
