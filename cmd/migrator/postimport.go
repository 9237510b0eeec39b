package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	sdk "github.com/gridshift/dataimport/sdk/go"
)

// postKind is one kind of post-import data (interface 4.2): the file in
// <dir>/<external_account_number>/, the body's array key and the endpoint.
type postKind struct {
	file, key string
	send      func(ctx context.Context, api *api, body io.Reader) (*http.Response, error)
	// batch is how many items go in one request. Notes and transactions are
	// idempotent per item (NOTE_ALREADY_EXISTS, TRANSACTION_ALREADY_EXISTS);
	// a statement already on the account fails its whole request, so
	// statements go one by one and a rerun skips exactly those that exist.
	batch int
	// new and existing result statuses, counted for the report
	newStatus, oldStatus string
}

var postKinds = []postKind{
	{file: "notes.json", key: "notes", batch: 500, newStatus: "NOTE_CREATION_SUCCESS", oldStatus: "NOTE_ALREADY_EXISTS",
		send: func(ctx context.Context, api *api, body io.Reader) (*http.Response, error) {
			return api.CreateNotesWithBody(ctx, nil, jsonType, body)
		}},
	{file: "transactions.json", key: "transactions", batch: 500, newStatus: "TRANSACTION_ADDED_TO_ACCOUNT", oldStatus: "TRANSACTION_ALREADY_EXISTS",
		send: func(ctx context.Context, api *api, body io.Reader) (*http.Response, error) {
			return api.CreateTransactionsWithBody(ctx, nil, jsonType, body)
		}},
	{file: "statements.json", key: "statements", batch: 1,
		send: func(ctx context.Context, api *api, body io.Reader) (*http.Response, error) {
			return api.CreateHistoricalStatementsWithBody(ctx, nil, jsonType, body)
		}},
}

// sendPostImport sends whichever post-import files exist for the account.
// It returns a summary for the account's row, one POST_IMPORT_FAILED row per
// problem, and an error when the run must stop (credentials refused).
func (p *pusher) sendPostImport(ctx context.Context, a account) (summary string, failures []row, fatal error) {
	id := a.id()
	fail := func(attr, code, detail string) {
		failures = append(failures, row{External: id, Outcome: outcomePostImportFailed, Code: code, Attr: attr, Detail: detail})
	}
	if !filepath.IsLocal(a.external) || strings.ContainsAny(a.external, `/\`) {
		fail("external_account_number", "invalid", "Cannot be used as a directory name under --post-import.")
		return "", failures, nil
	}
	var parts []string
	for _, k := range postKinds {
		path := filepath.Join(p.o.postImport, a.external, k.file)
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			fail(k.key, "read_error", err.Error())
			continue
		}
		st := postStats{}
		err = eachBatch(f, k.key, k.batch, func(items []json.RawMessage, offset int) error {
			return p.sendBatch(ctx, a, k, items, offset, &st)
		})
		_ = f.Close()
		var pf *postFailure
		switch {
		case errors.As(err, &pf):
			failures = append(failures, pf.rows...)
			if pf.fatal != nil {
				return strings.Join(parts, ", "), failures, pf.fatal
			}
		case err != nil:
			fail(k.key, "parse_error", fmt.Sprintf("%s: %v", path, err))
		}
		parts = append(parts, fmt.Sprintf("%s %d (%d new)", k.key, st.sent, st.created))
	}
	return strings.Join(parts, ", "), failures, nil
}

// maxAnswer caps what is read of a post-import answer.
const maxAnswer = 32 << 20

type postStats struct{ sent, created int }

// postFailure stops one kind of post-import data: the API refused a batch.
type postFailure struct {
	rows  []row
	fatal error
}

func (e *postFailure) Error() string { return fmt.Sprintf("%d post-import errors", len(e.rows)) }

func (p *pusher) sendBatch(ctx context.Context, a account, k postKind, items []json.RawMessage, offset int, st *postStats) error {
	id := a.id()
	body, err := json.Marshal(map[string]any{"import_supplier": a.supplier, "external_account_number": a.external, k.key: items})
	if err != nil {
		return fmt.Errorf("encode %s: %w", k.key, err)
	}
	resp, err := k.send(ctx, p.api, bytes.NewReader(body))
	var answer []byte
	if err == nil {
		answer, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		_ = resp.Body.Close()
	}
	if err != nil {
		r := fromErr(id, err)
		for i := range r.rows {
			r.rows[i].Outcome, r.rows[i].Attr = outcomePostImportFailed, k.key
		}
		return &postFailure{rows: r.rows, fatal: r.fatal}
	}
	e := failed(resp, answer)
	switch {
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated:
		st.sent += len(items)
		st.created += countCreated(answer, k, len(items))
		return nil
	case e == nil:
		e = sdk.NewAPIError(resp, answer) // an unexpected success
	case e.Code == "historical_statement_already_exists":
		st.sent += len(items) // sent by an earlier run
		return nil
	}
	var refused struct { // the transactions endpoint names the transaction refused
		TransactionData struct {
			TransactionID string `json:"transaction_id"`
		} `json:"transaction_data"`
	}
	_ = e.Decode(&refused)
	rows := errorRows(id, outcomePostImportFailed, e.Code, e.Detail, e.Errors)
	for i := range rows {
		rows[i].Attr = shiftAttr(rows[i].Attr, k.key, offset)
		if refused.TransactionData.TransactionID != "" {
			rows[i].Detail += " (transaction_id " + refused.TransactionData.TransactionID + ")"
		}
	}
	pf := &postFailure{rows: rows}
	if e.StatusCode == http.StatusUnauthorized {
		pf.fatal = e
	}
	return pf
}

// countCreated counts items the API says it added; without per-item
// statuses (statements) every item sent counts.
func countCreated(body []byte, k postKind, sent int) int {
	if k.newStatus == "" {
		return sent
	}
	type item struct {
		Status string `json:"status"`
	}
	var list []item
	if err := json.Unmarshal(body, &list); err != nil { // notes: a bare array
		var wrapped struct {
			Results []item `json:"results"`
		}
		if json.Unmarshal(body, &wrapped) != nil {
			return 0
		}
		list = wrapped.Results
	}
	n := 0
	for _, it := range list {
		if it.Status == k.newStatus {
			n++
		}
	}
	return n
}

// shiftAttr turns an attr relative to a batch ("notes.3.body") into one
// relative to the file ("notes.503.body"); an empty attr names the kind.
func shiftAttr(attr, key string, offset int) string {
	if attr == "" {
		return key
	}
	rest, ok := strings.CutPrefix(attr, key+".")
	if !ok {
		return attr
	}
	idx, tail, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(idx)
	if err != nil {
		return attr
	}
	out := key + "." + strconv.Itoa(n+offset)
	if tail != "" {
		out += "." + tail
	}
	return out
}

// eachBatch streams the items of a post-import file — a JSON array, or an
// object holding the array under key — and hands them over batch by batch,
// so a file of any size needs only one batch in memory.
func eachBatch(r io.Reader, key string, size int, fn func(items []json.RawMessage, offset int) error) error {
	dec := json.NewDecoder(bufio.NewReader(r))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if tok == json.Delim('{') {
		found := false
		for dec.More() {
			name, err := dec.Token()
			if err != nil {
				return fmt.Errorf("read: %w", err)
			}
			if name == key {
				found = true
				break
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return fmt.Errorf("read: %w", err)
			}
		}
		if !found {
			return fmt.Errorf("no %q array in the object", key)
		}
		if tok, err = dec.Token(); err != nil {
			return fmt.Errorf("read: %w", err)
		}
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("want a JSON array of %s", key)
	}
	var batch []json.RawMessage
	offset := 0
	for dec.More() {
		var it json.RawMessage
		if err := dec.Decode(&it); err != nil {
			return fmt.Errorf("read item %d: %w", offset+len(batch), err)
		}
		batch = append(batch, it)
		if len(batch) == size {
			if err := fn(batch, offset); err != nil {
				return err
			}
			offset += len(batch)
			batch = nil
		}
	}
	if _, err := dec.Token(); err != nil { // the closing ']': a cut file is an error
		return fmt.Errorf("read: %w", err)
	}
	if len(batch) > 0 {
		return fn(batch, offset)
	}
	return nil
}
