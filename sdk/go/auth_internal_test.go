package sdk

import (
	"context"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/auth"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// An access token the API calls expired (401 token_expired) is renewed with
// the refresh token and the request sent again, once.
func TestExpiredTokenIsRenewedAndTheRequestResent(t *testing.T) {
	st := testutil.NewStack(t, func(c *testutil.StackConfig) { c.TokenTTL = time.Second })
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	c, err := New(st.Server.URL, ten.APIKey, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := c.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The client's clock lags an hour, so it believes the token fresh and
	// sends it after it expired: only the API's 401 can tell it.
	c.tokens.mu.Lock()
	c.tokens.now = func() time.Time { return time.Now().Add(-time.Hour) }
	gen := c.tokens.gen
	c.tokens.mu.Unlock()
	time.Sleep(time.Second + auth.ClockSkew + 200*time.Millisecond) // past the API's leeway

	resp, err := c.ListAllAccountImportProcessesWithResponse(ctx, "DEMO_ENERGY", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != 200 {
		t.Fatalf("after renewal: %d %s", resp.StatusCode(), resp.Body)
	}
	c.tokens.mu.Lock()
	defer c.tokens.mu.Unlock()
	if c.tokens.gen != gen+1 || c.tokens.token == first {
		t.Fatalf("token generation %d → %d: not renewed exactly once", gen, c.tokens.gen)
	}
}
