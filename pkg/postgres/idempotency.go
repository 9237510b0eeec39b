package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// IdempotencyRequest identifies a request sent with an Idempotency-Key
// (CONTRACT §12): the key within its organisation, and the fingerprint a
// retry must match (method, path with raw query, SHA-256 of the raw body).
type IdempotencyRequest struct {
	OrganisationID int64
	Key            string
	Method         string
	Path           string
	BodySHA256     []byte
}

// StoredResponse is a complete answer kept for replay.
type StoredResponse struct {
	Status int
	Header http.Header // only the headers worth replaying
	Body   []byte
}

// IdempotencyClaim is the outcome of ClaimIdempotencyKey. Claimed: this
// request holds the key and runs, identified by ClaimID. Otherwise the key's
// current holder is described: its fingerprint, and its answer when it is
// complete.
type IdempotencyClaim struct {
	Claimed bool
	ClaimID string

	Method     string
	Path       string
	BodySHA256 []byte
	Complete   bool
	Response   StoredResponse
}

// SameRequest reports whether the key's holder was sent as r: a retry.
func (c IdempotencyClaim) SameRequest(r IdempotencyRequest) bool {
	return c.Method == r.Method && c.Path == r.Path && bytes.Equal(c.BodySHA256, r.BodySHA256)
}

// errKeyVanished means the row the claim conflicted with was gone when read
// (swept or released in between): the claim is tried again.
var errKeyVanished = errors.New("idempotency key vanished while claimed")

// ClaimIdempotencyKey claims r's key for one run of the request, in one
// statement so that racing requests agree on one holder. The key is taken
// when it is new, when its row has expired (ttl after its run started; a
// holder whose lease is still running keeps it), or when the same request's
// earlier claim is still in flight past its lease (its process died). A
// claim lasts lease; the answer, once stored, lasts until ttl after the
// claim.
func (db *DB) ClaimIdempotencyKey(ctx context.Context, r IdempotencyRequest, ttl, lease time.Duration) (IdempotencyClaim, error) {
	for range 3 {
		c, err := db.claimIdempotencyKey(ctx, r, ttl, lease)
		if !errors.Is(err, errKeyVanished) {
			return c, err
		}
	}
	return IdempotencyClaim{}, fmt.Errorf("claim idempotency key: %w", errKeyVanished)
}

func (db *DB) claimIdempotencyKey(ctx context.Context, r IdempotencyRequest, ttl, lease time.Duration) (IdempotencyClaim, error) {
	q := db.gorm.WithContext(ctx)
	claimID := uuid.NewString()
	var taken []string
	err := q.Raw(`
		INSERT INTO idempotency_keys AS k (organisation_id, key, method, path, body_sha256, claim_id, locked_until, expires_at)
		VALUES (@org, @key, @method, @path, @sum, @claim, now() + @lease * interval '1 microsecond', now() + @ttl * interval '1 microsecond')
		ON CONFLICT (organisation_id, key) DO UPDATE
		   SET method = EXCLUDED.method, path = EXCLUDED.path, body_sha256 = EXCLUDED.body_sha256,
		       state = 'in_flight', claim_id = EXCLUDED.claim_id, locked_until = EXCLUDED.locked_until,
		       response_status = NULL, response_headers = NULL, response_body = NULL,
		       created_at = now(), expires_at = EXCLUDED.expires_at
		 WHERE (k.expires_at <= now() AND (k.state = 'complete' OR k.locked_until <= now()))
		    OR (k.state = 'in_flight' AND k.locked_until <= now() AND k.method = EXCLUDED.method
		        AND k.path = EXCLUDED.path AND k.body_sha256 = EXCLUDED.body_sha256)
		RETURNING claim_id::text`,
		map[string]any{"org": r.OrganisationID, "key": r.Key, "method": r.Method, "path": r.Path, "sum": r.BodySHA256,
			"claim": claimID, "lease": lease.Microseconds(), "ttl": ttl.Microseconds()}).
		Scan(&taken).Error
	if err != nil {
		return IdempotencyClaim{}, fmt.Errorf("claim idempotency key: %w", err)
	}
	if len(taken) == 1 {
		return IdempotencyClaim{Claimed: true, ClaimID: taken[0]}, nil
	}
	var rows []struct {
		Method          string
		Path            string
		BodySHA256      []byte `gorm:"column:body_sha256"`
		State           string
		ResponseStatus  *int
		ResponseHeaders []byte
		ResponseBody    []byte
	}
	err = q.Raw(`SELECT method, path, body_sha256, state, response_status, response_headers, response_body
		FROM idempotency_keys WHERE organisation_id = ? AND key = ?`, r.OrganisationID, r.Key).Scan(&rows).Error
	if err != nil {
		return IdempotencyClaim{}, fmt.Errorf("read idempotency key: %w", err)
	}
	if len(rows) == 0 {
		return IdempotencyClaim{}, errKeyVanished
	}
	row := rows[0]
	c := IdempotencyClaim{Method: row.Method, Path: row.Path, BodySHA256: row.BodySHA256, Complete: row.State == "complete"}
	if c.Complete && row.ResponseStatus != nil {
		c.Response = StoredResponse{Status: *row.ResponseStatus, Body: row.ResponseBody}
		if err := json.Unmarshal(row.ResponseHeaders, &c.Response.Header); err != nil {
			return IdempotencyClaim{}, fmt.Errorf("read idempotency key's stored headers: %w", err)
		}
		if c.Response.Body == nil {
			c.Response.Body = []byte{}
		}
	}
	return c, nil
}

// CompleteIdempotencyKey stores the answer of the claim claimID. It reports
// false when the claim is no longer this request's (taken over after its
// lease, or swept): the answer is then not kept.
func (db *DB) CompleteIdempotencyKey(ctx context.Context, orgID int64, key, claimID string, resp StoredResponse) (bool, error) {
	header := resp.Header
	if header == nil {
		header = http.Header{}
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return false, fmt.Errorf("store idempotent answer: %w", err)
	}
	body := resp.Body
	if body == nil {
		body = []byte{}
	}
	res := db.gorm.WithContext(ctx).Exec(`
		UPDATE idempotency_keys
		   SET state = 'complete', response_status = ?, response_headers = ?::jsonb, response_body = ?, locked_until = now()
		 WHERE organisation_id = ? AND key = ? AND claim_id = ? AND state = 'in_flight'`,
		resp.Status, string(hj), body, orgID, key, claimID)
	if res.Error != nil {
		return false, fmt.Errorf("store idempotent answer: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// ReleaseIdempotencyKey drops the claim claimID without storing an answer,
// so that a retry with the key runs again. Someone else's claim is left alone.
func (db *DB) ReleaseIdempotencyKey(ctx context.Context, orgID int64, key, claimID string) error {
	err := db.gorm.WithContext(ctx).Exec(`
		DELETE FROM idempotency_keys WHERE organisation_id = ? AND key = ? AND claim_id = ? AND state = 'in_flight'`,
		orgID, key, claimID).Error
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// SweepIdempotencyKeys deletes up to limit expired keys, oldest first, and
// returns how many it deleted. A claim still inside its lease is kept, and
// rows another sweeper (another worker) is deleting are skipped, not waited
// for.
func (db *DB) SweepIdempotencyKeys(ctx context.Context, limit int) (int64, error) {
	if limit <= 0 {
		return 0, nil
	}
	res := db.gorm.WithContext(ctx).Exec(`
		DELETE FROM idempotency_keys
		 WHERE (organisation_id, key) IN (
			SELECT organisation_id, key FROM idempotency_keys
			 WHERE expires_at <= now() AND (state = 'complete' OR locked_until <= now())
			 ORDER BY expires_at
			 LIMIT ?
			 FOR UPDATE SKIP LOCKED)`, limit)
	if res.Error != nil {
		return 0, fmt.Errorf("sweep idempotency keys: %w", res.Error)
	}
	return res.RowsAffected, nil
}
