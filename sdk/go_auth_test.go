package sdk_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/auth"
	"github.com/gridshift/dataimport/pkg/testutil"
	sdk "github.com/gridshift/dataimport/sdk/go"
)

// An access token the API calls expired (401 token_expired) is renewed with
// the refresh token and the request sent again, once.
func TestExpiredTokenIsRenewedAndTheRequestResent(t *testing.T) {
	st := testutil.NewStack(t, func(c *testutil.StackConfig) { c.TokenTTL = time.Second })
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	f := newFront(t, st.Server.URL, nil)
	// The client's clock lags an hour, so it believes the token fresh and
	// sends it after it expired: only the API's 401 can tell it.
	c, err := sdk.New(f.URL, ten.APIKey, sdk.Options{Now: func() time.Time { return time.Now().Add(-time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := c.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second + auth.ClockSkew + 200*time.Millisecond) // past the API's leeway

	resp, err := c.ListAllAccountImportProcessesWithResponse(ctx, "DEMO_ENERGY", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != 200 {
		t.Fatalf("after renewal: %d %s", resp.StatusCode(), resp.Body)
	}
	second, err := c.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.triesOf(http.MethodPost, "/v1/graphql/"); n != 2 || second == first {
		t.Fatalf("%d obtainToken calls (token changed: %v), want 2: the first token and one renewal", n, second != first)
	}
}
