package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
)

// Idempotency keys of requests whose body is too large to hold (a job's
// corrected lines): the body's digest is known only once it has streamed
// through, so the key is claimed with StreamedBody in place of the digest,
// and the real digest is stored with the answer. A retry of a complete
// answer reads its body through and compares digests, as a job upload's
// retry does.

// StreamedBody is the digest a streamed request's key is claimed with.
var StreamedBody = func() []byte {
	s := sha256.Sum256([]byte("dataimport: body streamed, digest stored with the answer"))
	return s[:]
}()

// CompleteStreamedIdempotencyKey stores the answer of the claim claimID
// with the digest of the body it answered; false when the claim is no
// longer this request's.
func (db *DB) CompleteStreamedIdempotencyKey(ctx context.Context, orgID int64, key, claimID string, bodySHA256 []byte, resp StoredResponse) (bool, error) {
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
	res, err := db.sql.ExecContext(ctx, `
		UPDATE idempotency_keys
		   SET state = 'complete', response_status = $1, response_headers = $2::jsonb, response_body = $3, locked_until = now(), body_sha256 = $4
		 WHERE organisation_id = $5 AND key = $6 AND claim_id = $7 AND state = 'in_flight'`,
		resp.Status, string(hj), body, bodySHA256, orgID, key, claimID)
	if err != nil {
		return false, fmt.Errorf("store idempotent answer: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
