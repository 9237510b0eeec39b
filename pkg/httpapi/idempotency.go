package httpapi

import (
	"context"
	"crypto/sha256"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// Idempotency keys (CONTRACT §12), with Stripe's semantics: the first
// complete answer to a POST sent with Idempotency-Key is stored for
// IDEMPOTENCY_TTL and replayed byte for byte to retries, with
// Idempotent-Replayed: true.
const (
	HeaderIdempotencyKey     = "Idempotency-Key"
	HeaderIdempotentReplayed = "Idempotent-Replayed"

	// DefaultIdempotencyTTL applies when Config.IdempotencyTTL is not set.
	DefaultIdempotencyTTL = 24 * time.Hour

	maxIdempotencyKeyLen = 255

	// minIdempotencyLease is how long a claim holds its key at least before a
	// retry may take it over: a request whose process died (SIGKILL) never
	// releases its claim. It must outlast every request, create-account's
	// PROCESS_WAIT among them (the lease is at least twice that).
	minIdempotencyLease = 5 * time.Minute

	// maxStoredAnswer bounds the copy of an answer kept in memory for
	// storing; a larger answer is not stored, and a retry runs again.
	maxStoredAnswer = 16 << 20

	// settleTimeout bounds storing or releasing a claim after the handler,
	// which does not stop when the caller hangs up.
	settleTimeout = 10 * time.Second
)

// replayedHeaders are the response headers stored with an answer: those that
// carry meaning for the caller. X-Request-ID is not among them: a replay
// has its own.
var replayedHeaders = []string{"Content-Type", "Location", "Retry-After", "Link"}

// IdempotencyStore keeps idempotency keys and the answers stored under them.
type IdempotencyStore interface {
	ClaimIdempotencyKey(ctx context.Context, r postgres.IdempotencyRequest, ttl, lease time.Duration) (postgres.IdempotencyClaim, error)
	CompleteIdempotencyKey(ctx context.Context, orgID int64, key, claimID string, resp postgres.StoredResponse) (bool, error)
	ReleaseIdempotencyKey(ctx context.Context, orgID int64, key, claimID string) error
	// CompleteStreamedIdempotencyKey stores an answer with the digest of a
	// body hashed as it streamed (job_lines.go).
	CompleteStreamedIdempotencyKey(ctx context.Context, orgID int64, key, claimID string, bodySHA256 []byte, resp postgres.StoredResponse) (bool, error)
}

// idempotency serves POSTs sent with Idempotency-Key. It runs after
// authentication (keys are per organisation) and after bodyRules (the body
// is read). Without the header a request goes straight through, unbuffered.
func (s *Server) idempotency() gin.HandlerFunc {
	ttl := s.cfg.IdempotencyTTL
	if ttl <= 0 {
		ttl = DefaultIdempotencyTTL
	}
	lease := max(minIdempotencyLease, 2*s.cfg.ProcessWait)
	store := s.deps.Idempotency
	return func(c *gin.Context) {
		values := c.Request.Header.Values(HeaderIdempotencyKey)
		if c.Request.Method != http.MethodPost || len(values) == 0 {
			c.Next()
			return
		}
		if !validIdempotencyKey(values) {
			renderError(c, dataimport.Errorf(dataimport.CodeInvalidIdempotencyKey,
				"Idempotency-Key must be sent once, with 1 to %d printable ASCII characters.", maxIdempotencyKeyLen))
			return
		}
		sum := sha256.Sum256(requestBody(c))
		req := postgres.IdempotencyRequest{OrganisationID: principal(c).OrganisationID, Key: values[0],
			Method: c.Request.Method, Path: c.Request.URL.RequestURI(), BodySHA256: sum[:]}
		claim, err := store.ClaimIdempotencyKey(c.Request.Context(), req, ttl, lease)
		if err != nil {
			abortWithError(c, err)
			return
		}
		switch {
		case !claim.Claimed && !claim.SameRequest(req):
			renderError(c, dataimport.Errorf(dataimport.CodeIdempotencyKeyReused,
				"This Idempotency-Key was used with another request (method, path or body); use a new key for a new request."))
			return
		case !claim.Claimed && !claim.Complete:
			renderError(c, &dataimport.Error{Code: dataimport.CodeIdempotencyKeyInUse, RetryAfterSeconds: 1,
				Detail: "A request with this Idempotency-Key is still running; retry once it has finished."})
			return
		case !claim.Claimed:
			replay(c, claim.Response)
			return
		}

		cw := &captureWriter{ResponseWriter: c.Writer, limit: maxStoredAnswer}
		c.Writer = cw
		finished := false
		defer func() {
			// Also on a panic (finished is false): the claim is dropped, and
			// recoverPanics answers 500.
			c.Writer = cw.ResponseWriter
			settle(c, store, req, claim.ClaimID, cw, finished)
		}()
		c.Next()
		finished = true
	}
}

// validIdempotencyKey accepts one value of 1 to 255 printable ASCII
// characters: it is stored, compared and logged as it is.
func validIdempotencyKey(values []string) bool {
	if len(values) != 1 || len(values[0]) == 0 || len(values[0]) > maxIdempotencyKeyLen {
		return false
	}
	for i := 0; i < len(values[0]); i++ {
		if b := values[0][i]; b < 0x20 || b > 0x7e {
			return false
		}
	}
	return true
}

// storedStatus reports whether an answer with this status is kept for
// replay. Not kept, so that the retry runs: 5xx (our failure), 429 (slots
// or throttling free up), 401 (the caller fixes its token) and 499 (the
// caller left; nobody saw the answer).
func storedStatus(status int) bool {
	switch {
	case status >= 500, status == http.StatusTooManyRequests, status == http.StatusUnauthorized, status == 499:
		return false
	}
	return true
}

// settle stores the handler's answer under the claim, or drops the claim
// when the answer is not kept. It runs after the caller may have left, so
// it does not use the request's cancellation.
func settle(c *gin.Context, store IdempotencyStore, req postgres.IdempotencyRequest, claimID string, cw *captureWriter, finished bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), settleTimeout)
	defer cancel()
	log := logger(c)
	if finished && cw.Written() && !cw.over && storedStatus(cw.Status()) {
		header := http.Header{}
		for _, name := range replayedHeaders {
			if v := cw.Header().Values(name); len(v) > 0 {
				header[name] = slices.Clone(v)
			}
		}
		kept, err := store.CompleteIdempotencyKey(ctx, req.OrganisationID, req.Key, claimID,
			postgres.StoredResponse{Status: cw.Status(), Header: header, Body: cw.buf.Bytes()})
		switch {
		case err == nil && kept:
			return
		case err == nil:
			// Another request took the key over after our lease ran out.
			log.WarnContext(ctx, "idempotency key claim lost before its answer was stored", "status", cw.Status())
			return
		default:
			log.ErrorContext(ctx, "storing the answer of an idempotency key failed; dropping the claim", "err", err.Error())
		}
	}
	if err := store.ReleaseIdempotencyKey(ctx, req.OrganisationID, req.Key, claimID); err != nil {
		// The claim stays in flight until its lease ends; retries get 409 until then.
		log.ErrorContext(ctx, "releasing an idempotency key failed", "err", err.Error())
	}
}

// replay answers with a stored answer: same status, stored headers and body
// bytes, marked as a replay.
func replay(c *gin.Context, r postgres.StoredResponse) {
	h := c.Writer.Header()
	for name, v := range r.Header {
		h[http.CanonicalHeaderKey(name)] = slices.Clone(v)
	}
	h.Set(HeaderIdempotentReplayed, "true")
	c.Writer.WriteHeader(r.Status)
	_, _ = c.Writer.Write(r.Body)
	c.Abort()
}
