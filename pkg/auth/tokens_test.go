package auth_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/auth"
)

// TestClockSkew: a token minted on a replica whose clock is a few seconds
// ahead, or checked a few seconds after it expired, is judged with
// auth.ClockSkew of leeway; beyond it the token is refused.
func TestClockSkew(t *testing.T) {
	secret := strings.Repeat("s", 48)
	trueNow := time.Now()
	checker := auth.NewIssuer(secret, time.Hour, time.Hour, func() time.Time { return trueNow })
	mint := func(t *testing.T, clockOffset, ttl time.Duration) auth.TokenPair {
		t.Helper()
		p, err := auth.NewIssuer(secret, ttl, ttl, func() time.Time { return trueNow.Add(clockOffset) }).Issue(7, 9)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name        string
		clockOffset time.Duration // of the minting replica
		ttl         time.Duration
		want        error // nil: accepted
	}{
		{"same clock", 0, time.Hour, nil},
		{"minter 3s ahead", 3 * time.Second, time.Hour, nil},
		{"minter 3s behind", -3 * time.Second, time.Hour, nil},
		{"minter 60s ahead", 60 * time.Second, time.Hour, auth.ErrTokenInvalid},
		{"expired 3s ago, within the leeway", -time.Minute - 3*time.Second, time.Minute, nil},
		{"expired just beyond the leeway", -time.Minute - auth.ClockSkew - time.Second, time.Minute, auth.ErrTokenExpired},
		{"expired an hour ago", -2 * time.Hour, time.Hour, auth.ErrTokenExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mint(t, tc.clockOffset, tc.ttl)
			for kind, parse := range map[string]func(string) (auth.Claims, error){
				"access": checker.ParseAccess, "refresh": checker.ParseRefresh,
			} {
				token := p.Token
				if kind == "refresh" {
					token = p.RefreshToken
				}
				c, err := parse(token)
				switch {
				case tc.want == nil && (err != nil || c.OrgID != 7 || c.KeyID != 9):
					t.Errorf("%s token: (%+v, %v), want accepted", kind, c, err)
				case tc.want != nil && !errors.Is(err, tc.want):
					t.Errorf("%s token: err = %v, want %v", kind, err, tc.want)
				}
			}
		})
	}
}
