package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/dataimport/dataimporttest"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// createBody mirrors the create-account body (its Go type is unexported);
// only its field names and types matter to the hostile bodies.
type createBody struct {
	ExternalAccountNumber string `json:"external_account_number" dataimport:"required"`
	ImportSupplierCode    string `json:"import_supplier_code" dataimport:"required"`
	OperationsTeamName    string `json:"operations_team_name" dataimport:"required"`
	DryRun                *bool  `json:"dry_run,omitempty"`
}

// v2Body mirrors a v2 create (and, without task_params, a v2 validate):
// the account goes through the same bounded binder inside "payload".
type v2Body struct {
	Payload    dataimport.Account `json:"payload"`
	TaskParams *struct {
		IsDryRun            *bool                `json:"is_dry_run,omitempty"`
		ScheduleWindowStart *dataimport.DateTime `json:"schedule_window_start,omitempty"`
		ScheduleWindowEnd   *dataimport.DateTime `json:"schedule_window_end,omitempty"`
	} `json:"task_params,omitempty"`
}

// worstBodies is every POST endpoint with the most expensive bodies that
// fit in limit bytes: the hostile ones generated from its request type and
// the largest ones that pass every rule.
func worstBodies(limit int) map[string][]dataimporttest.Body {
	const sup, ext = "DEMO_ENERGY", "EXT-BIG"
	account := append(dataimporttest.WorstBodies(reflect.TypeFor[dataimport.Account](), limit), dataimporttest.ValidAccounts(sup, ext, limit)...)
	return map[string][]dataimporttest.Body{
		validatePath: account,
		stagePath:    account,
		createPath:   dataimporttest.WorstBodies(reflect.TypeFor[createBody](), limit),
		notesPath:    append(dataimporttest.WorstBodies(reflect.TypeFor[dataimport.NotesRequest](), limit), dataimporttest.ValidNotes(sup, ext, limit)),
		transactionsPath: append(dataimporttest.WorstBodies(reflect.TypeFor[dataimport.TransactionsRequest](), limit),
			dataimporttest.ValidTransactions(sup, ext, limit)),
		statementsPath: append(dataimporttest.WorstBodies(reflect.TypeFor[dataimport.StatementsRequest](), limit),
			dataimporttest.ValidStatements(sup, ext, limit)),
		paymentPath: dataimporttest.WorstBodies(reflect.TypeFor[dataimport.PaymentInstructionRequest](), limit),
		// Product writes need the products scope, so the 400s are measured
		// on validate-products: the same decoder and rules.
		validateProductsPath: dataimporttest.WorstBodies(reflect.TypeFor[dataimport.ProductsRequest](), limit),
		graphqlPath:          graphqlWorstBodies(limit),
		v2CreatePath:         dataimporttest.WorstBodies(reflect.TypeFor[v2Body](), limit),
		v2ValidatePath:       dataimporttest.WorstBodies(reflect.TypeFor[v2Body](), limit),
	}
}

const (
	createPath  = "/v1/data-import/account-import-process/process/"
	paymentPath = "/v1/data-import/payment-instruction/create/"
	graphqlPath = "/v1/graphql/"
	// v2
	v2CreatePath   = "/v2/data-import/accounts/"
	v2ValidatePath = "/v2/data-import/accounts/validate/"
)

// graphqlWorstBodies are hostile obtainToken requests: the variables are
// free-form JSON, the query is GraphQL. They fill the GraphQL body limit
// (64 KiB), except one a byte over it.
func graphqlWorstBodies(limit int) []dataimporttest.Body {
	over := min(limit, 64<<10+1)
	limit = min(limit, 64<<10)
	fill := func(head, item, tail string) func() []byte {
		return func() []byte {
			n := (limit - len(head) - len(tail)) / (len(item) + 1)
			return []byte(head + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + tail)
		}
	}
	aliases := strings.Repeat(`a: obtainToken(input: {APIKey: "x"}) { token } `, 8192/50)
	return []dataimporttest.Body{
		{Name: "variables-empty-objects", Make: fill(`{"query":"query { __typename }","variables":{"v":[`, "{}", "]}}")},
		{Name: "variables-unknown-keys", Make: fill(`{"query":"query { __typename }","variables":{"v":0,`, `"k":0`, "}}")},
		{Name: "variables-deep-nesting", Make: fill(`{"query":"query { __typename }","variables":{"v":[`,
			strings.Repeat("[", 60)+strings.Repeat("]", 60), "]}}")},
		{Name: "unknown-keys", Make: fill(`{"query":"query { __typename }",`, `"k":0`, "}")},
		{Name: "query-many-aliases", Make: func() []byte { return []byte(fmt.Sprintf(`{"query":"mutation { %s }"}`, aliases)) }},
		{Name: "query-too-long", Make: fill(`{"query":"query { `, "__typename", ` }"}`)},
		{Name: "over-the-limit", Make: func() []byte { return []byte(`{"query":"` + strings.Repeat(" ", over-len(`{"query":""}`)) + `"}`) }},
	}
}

// endpoints are the POST endpoints by short name (a benchmark name's
// slashes would read as sub-benchmarks).
var endpoints = []struct{ name, path string }{
	{"validate", validatePath}, {"stage", stagePath}, {"create", createPath}, {"notes", notesPath},
	{"transactions", transactionsPath}, {"statements", statementsPath}, {"payment-instruction", paymentPath}, {"graphql", graphqlPath},
	{"v2-create", v2CreatePath}, {"v2-validate", v2ValidatePath}, {"validate-products", validateProductsPath},
}

// cpuTime is the CPU this process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWorstBodies sends each endpoint the worst bodies that fit in
// MAX_BODY_BYTES through the real router, Postgres and Redis, and reports
// per request the heap allocated (by the API and the client; an upper
// bound of the heap it can hold) and the CPU used by this process. The
// post-import endpoints work on a real imported account. The targets are
// under 50 MB and under 1 s per request. Run it with a fixed count:
//
//	go test -run '^$' -bench WorstBodies -benchtime 2x ./pkg/httpapi/
func BenchmarkWorstBodies(b *testing.B) {
	st := testutil.NewStack(b, testutil.FastPipeline)
	ctx := context.Background()
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	if _, err := st.DB.CreateTeam(ctx, "Migrations"); err != nil {
		b.Fatal(err)
	}
	w := st.StartWorker()
	st.ImportAccount(ten.Token, "DEMO_ENERGY", "EXT-BIG", "Migrations")
	w.Shutdown() // its polling would count as the API's allocations
	bodies := worstBodies(int(st.Config.MaxBodyBytes))
	for _, ep := range endpoints {
		path := ep.path
		for _, bd := range bodies[path] {
			b.Run(ep.name+"/"+bd.Name, func(b *testing.B) {
				body := bd.Make()
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				cpu0 := cpuTime()
				n := 0
				for b.Loop() {
					n++
					if status := post(b, st, ten.Token, path, body); status >= 500 {
						b.Fatalf("status %d", status)
					}
				}
				cpu1 := cpuTime()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(n)/1e6, "heap-MB/op")
				b.ReportMetric(float64(cpu1-cpu0)/float64(n)/1e6, "cpu-ms/op")
				b.ReportMetric(float64(len(body))/1e6, "body-MB")
			})
		}
	}
}

// post sends body as is (no copy kept for the contract check, which would
// count as the API's allocations) and drains the answer.
func post(tb testing.TB, st *testutil.Stack, token, path string, body []byte) int {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, st.Server.URL+path, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Token "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode
}
