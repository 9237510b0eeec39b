package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
	sdk "github.com/gridshift/dataimport/sdk/go"
	"github.com/gridshift/dataimport/sdk/go/client"
)

var platformRe = regexp.MustCompile(`^A-[0-9A-F]{8}$`)

// newStack is the real API and a worker on a private Postgres and Redis,
// with a supplier, a team and a tenant whose API key the SDK uses.
func newStack(t *testing.T, opts ...testutil.StackOption) (*testutil.Stack, string) {
	t.Helper()
	st := testutil.NewStack(t, append([]testutil.StackOption{testutil.FastPipeline}, opts...)...)
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	if _, err := st.DB.CreateTeam(context.Background(), "Migrations"); err != nil {
		t.Fatal(err)
	}
	st.StartWorker()
	return st, ten.APIKey
}

// The example of the Go SDK, end to end over HTTP against the real stack:
// validate → stage → create → status → notes, every exchange checked
// against the OpenAPI document.
func TestGoSDKEndToEnd(t *testing.T) {
	st, key := newStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := sdk.New(st.Server.URL, key, sdk.Options{HTTPClient: &http.Client{Transport: testutil.ContractTransport(t, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := testutil.ReadRepoFile("pkg/dataimport/testdata/account_valid.json")
	if err != nil {
		t.Fatal(err)
	}
	account := json.RawMessage(raw) // decimals as JSON numbers: accepted on input

	validated, err := c.ValidateAccount(ctx, account)
	if err != nil {
		t.Fatalf("validate: %v", err)
	}
	if validated.ExternalAccountNumber != "EXT-0001" {
		t.Fatalf("validated account: %+v", validated)
	}
	staged, err := c.StageAccount(ctx, account)
	if err != nil || staged.ImportSupplier != "DEMO_ENERGY" {
		t.Fatalf("stage: %+v, %v", staged, err)
	}
	created, err := c.CreateAccount(ctx, client.CreateAccountRequest{ImportSupplierCode: "DEMO_ENERGY", ExternalAccountNumber: "EXT-0001", OperationsTeamName: "Migrations"})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	status, err := c.WaitCreated(ctx, "DEMO_ENERGY", "EXT-0001", 100*time.Millisecond)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	if status.Status != "COMPLETED" || !platformRe.MatchString(status.PlatformAccountNumber) || status.AccountCreatedAt == nil {
		t.Fatalf("status: %+v", status)
	}
	if !created.InProgress && created.PlatformAccountNumber != status.PlatformAccountNumber {
		t.Fatalf("created %s, status says %s", created.PlatformAccountNumber, status.PlatformAccountNumber)
	}
	body := "Migrated with the Go SDK."
	at := time.Date(2025, 6, 1, 10, 30, 0, 0, time.FixedZone("BST", 3600))
	notes, err := c.CreateNotes(ctx, client.NotesRequest{ImportSupplier: "DEMO_ENERGY", ExternalAccountNumber: "EXT-0001",
		Notes: []client.Note{{Body: &body, CreatedAt: &at}}})
	if err != nil {
		t.Fatalf("notes: %v", err)
	}
	if len(notes) != 1 || notes[0].Status != "NOTE_CREATION_SUCCESS" || !notes[0].CreatedAt.Equal(at) {
		t.Fatalf("notes: %+v", notes)
	}

	// Errors come back typed, from the envelope.
	_, err = c.Status(ctx, "DEMO_ENERGY", "NO-SUCH-ACCOUNT")
	var apiErr *sdk.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "not_found" || apiErr.RequestID == "" {
		t.Fatalf("unknown account: %#v", err)
	}
	_, err = c.ValidateAccount(ctx, map[string]any{"import_supplier": "DEMO_ENERGY"})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || len(apiErr.Errors) == 0 {
		t.Fatalf("invalid account: %#v", err)
	}

	// A bad key is refused as a typed error too.
	bad, err := sdk.New(st.Server.URL, "dik_not-a-key", sdk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Status(ctx, "DEMO_ENERGY", "EXT-0001"); !errors.As(err, &apiErr) || apiErr.Code != "invalid_api_key" {
		t.Fatalf("bad key: %v", err)
	}
}
