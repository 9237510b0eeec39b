package postgres_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

const (
	idemTTL   = 24 * time.Hour
	idemLease = 5 * time.Minute
)

func idemRequest(org int64, key, body string) postgres.IdempotencyRequest {
	sum := sha256.Sum256([]byte(body))
	return postgres.IdempotencyRequest{OrganisationID: org, Key: key, Method: http.MethodPost, Path: "/v1/data-import/notes/create/?x=1", BodySHA256: sum[:]}
}

// TestIdempotencyKeyStore runs the store's cases on one shared database,
// each with its own keys.
func TestIdempotencyKeyStore(t *testing.T) {
	t.Parallel()
	d := testutil.NewDatabase(t)
	org, err := d.DB.CreateOrganisation(t.Context(), "Idempotent Partner")
	if err != nil {
		t.Fatal(err)
	}
	other, err := d.DB.CreateOrganisation(t.Context(), "Other Partner")
	if err != nil {
		t.Fatal(err)
	}
	db := d.DB
	claim := func(t *testing.T, r postgres.IdempotencyRequest) postgres.IdempotencyClaim {
		t.Helper()
		c, err := db.ClaimIdempotencyKey(t.Context(), r, idemTTL, idemLease)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	exec := func(t *testing.T, q string, args ...any) {
		t.Helper()
		if err := db.Gorm().WithContext(t.Context()).Exec(q, args...).Error; err != nil {
			t.Fatal(err)
		}
	}

	t.Run("claim, in flight, complete, replay", func(t *testing.T) {
		r := idemRequest(org.ID, "k-replay", `{"a":1}`)
		first := claim(t, r)
		if !first.Claimed || first.ClaimID == "" {
			t.Fatalf("first claim %+v", first)
		}
		if c := claim(t, r); c.Claimed || c.Complete || !c.SameRequest(r) {
			t.Fatalf("claim while in flight: %+v", c)
		}
		other := r
		other.BodySHA256 = idemRequest(org.ID, "k-replay", `{"a":2}`).BodySHA256
		if c := claim(t, other); c.Claimed || c.SameRequest(other) {
			t.Fatalf("claim with another body: %+v", c)
		}
		body := []byte("{\"ok\":true}\n\x00\xff")
		resp := postgres.StoredResponse{Status: http.StatusCreated, Body: body,
			Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}, "Location": {"/x/"}}}
		if ok, err := db.CompleteIdempotencyKey(t.Context(), org.ID, r.Key, first.ClaimID, resp); err != nil || !ok {
			t.Fatalf("complete: %v %v", ok, err)
		}
		c := claim(t, r)
		if c.Claimed || !c.Complete || !c.SameRequest(r) || c.Response.Status != http.StatusCreated || !bytes.Equal(c.Response.Body, body) ||
			c.Response.Header.Get("Content-Type") != "application/json; charset=utf-8" || c.Response.Header.Get("Location") != "/x/" {
			t.Fatalf("claim after complete: %+v", c)
		}
		// Completing twice is refused: the answer stays the first one.
		if ok, _ := db.CompleteIdempotencyKey(t.Context(), org.ID, r.Key, first.ClaimID, postgres.StoredResponse{Status: 200}); ok {
			t.Fatal("a second complete was accepted")
		}
	})

	t.Run("release lets the retry run", func(t *testing.T) {
		r := idemRequest(org.ID, "k-release", `{}`)
		first := claim(t, r)
		if err := db.ReleaseIdempotencyKey(t.Context(), org.ID, r.Key, first.ClaimID); err != nil {
			t.Fatal(err)
		}
		if c := claim(t, r); !c.Claimed || c.ClaimID == first.ClaimID {
			t.Fatalf("claim after release: %+v", c)
		}
	})

	t.Run("keys are per organisation", func(t *testing.T) {
		a, b := claim(t, idemRequest(org.ID, "k-shared", `{}`)), claim(t, idemRequest(other.ID, "k-shared", `{"other":1}`))
		if !a.Claimed || !b.Claimed {
			t.Fatalf("same key, two organisations: %+v %+v", a, b)
		}
	})

	t.Run("abandoned claim is taken over after its lease", func(t *testing.T) {
		r := idemRequest(org.ID, "k-abandoned", `{"b":1}`)
		dead := claim(t, r)
		exec(t, `UPDATE idempotency_keys SET locked_until = now() - interval '1 second' WHERE organisation_id = ? AND key = ?`, org.ID, r.Key)
		// Another request with the key cannot take it: it is reused, not retried.
		if c := claim(t, idemRequest(org.ID, r.Key, `{"b":2}`)); c.Claimed {
			t.Fatalf("another request took over an abandoned claim: %+v", c)
		}
		taker := claim(t, r)
		if !taker.Claimed || taker.ClaimID == dead.ClaimID {
			t.Fatalf("retry after the lease: %+v", taker)
		}
		// The late original can neither store its answer nor drop the new claim.
		if ok, err := db.CompleteIdempotencyKey(t.Context(), org.ID, r.Key, dead.ClaimID, postgres.StoredResponse{Status: 201}); err != nil || ok {
			t.Fatalf("late complete: %v %v", ok, err)
		}
		if err := db.ReleaseIdempotencyKey(t.Context(), org.ID, r.Key, dead.ClaimID); err != nil {
			t.Fatal(err)
		}
		if c := claim(t, r); c.Claimed || c.Complete {
			t.Fatalf("the late original dropped the new claim: %+v", c)
		}
		if ok, err := db.CompleteIdempotencyKey(t.Context(), org.ID, r.Key, taker.ClaimID, postgres.StoredResponse{Status: 201}); err != nil || !ok {
			t.Fatalf("new holder's complete: %v %v", ok, err)
		}
	})

	t.Run("an expired answer is not replayed", func(t *testing.T) {
		r := idemRequest(org.ID, "k-expired", `{}`)
		first := claim(t, r)
		if ok, err := db.CompleteIdempotencyKey(t.Context(), org.ID, r.Key, first.ClaimID, postgres.StoredResponse{Status: 200, Body: []byte("old")}); err != nil || !ok {
			t.Fatal(ok, err)
		}
		exec(t, `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE organisation_id = ? AND key = ?`, org.ID, r.Key)
		// Past its TTL the key is free again, for any request.
		if c := claim(t, idemRequest(org.ID, r.Key, `{"new":1}`)); !c.Claimed {
			t.Fatalf("claim of an expired key: %+v", c)
		}
	})

	t.Run("concurrent claims: one holder", func(t *testing.T) {
		r := idemRequest(org.ID, "k-race", `{}`)
		var wg sync.WaitGroup
		var mu sync.Mutex
		claimed := 0
		for range 16 {
			wg.Go(func() {
				c, err := db.ClaimIdempotencyKey(t.Context(), r, idemTTL, idemLease)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if c.Claimed {
					claimed++
				}
			})
		}
		wg.Wait()
		if claimed != 1 {
			t.Fatalf("%d of 16 racing claims hold the key, want 1", claimed)
		}
	})
}

// TestSweepIdempotencyKeys: expired keys go, in bounded batches; live keys
// and claims inside their lease stay.
func TestSweepIdempotencyKeys(t *testing.T) {
	t.Parallel()
	d := testutil.NewDatabase(t)
	db := d.DB
	org, err := db.CreateOrganisation(t.Context(), "Sweep Partner")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		r := idemRequest(org.ID, fmt.Sprintf("expired-%d", i), `{}`)
		c, err := db.ClaimIdempotencyKey(t.Context(), r, idemTTL, idemLease)
		if err != nil || !c.Claimed {
			t.Fatal(c, err)
		}
		if _, err := db.CompleteIdempotencyKey(t.Context(), org.ID, r.Key, c.ClaimID, postgres.StoredResponse{Status: 200}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"live", "running"} {
		if _, err := db.ClaimIdempotencyKey(t.Context(), idemRequest(org.ID, k, `{}`), idemTTL, idemLease); err != nil {
			t.Fatal(err)
		}
	}
	must(t, db.Gorm().Exec(`UPDATE idempotency_keys SET expires_at = now() - interval '1 minute' WHERE key LIKE 'expired-%' OR key = 'running'`).Error)

	if n, err := db.SweepIdempotencyKeys(t.Context(), 2); err != nil || n != 2 {
		t.Fatalf("first batch: %d %v, want 2", n, err)
	}
	if n, err := db.SweepIdempotencyKeys(t.Context(), 100); err != nil || n != 3 {
		t.Fatalf("second batch: %d %v, want 3", n, err)
	}
	var left []string
	must(t, db.Gorm().Raw(`SELECT key FROM idempotency_keys ORDER BY key`).Scan(&left).Error)
	if fmt.Sprint(left) != "[live running]" {
		t.Fatalf("left after the sweep: %v, want the live key and the claim inside its lease", left)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
