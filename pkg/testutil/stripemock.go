package testutil

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/config"
)

// StripeTestKey is a key stripe-mock accepts (any sk_test_… does).
const StripeTestKey = "sk_test_dataimport"

// StripeMock is a private stripe-mock server (github.com/stripe/stripe-mock,
// the go tool declared in go.mod) on a free port.
type StripeMock struct {
	URL    string
	Logs   *SyncBuffer
	cmd    *exec.Cmd
	exited chan struct{}
}

// NewStripeMock starts stripe-mock on a free port and stops it when tb ends.
func NewStripeMock(tb testing.TB) *StripeMock {
	tb.Helper()
	bin, err := build("github.com/stripe/stripe-mock")
	if err != nil {
		tb.Fatal(err)
	}
	// Both listeners on loopback and free ports: without -https-addr it
	// would also take the fixed HTTPS port 12112, and a second instance dies.
	var addrs [2]string
	for i := range addrs {
		port, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		addrs[i] = "127.0.0.1:" + strconv.Itoa(port)
	}
	m := &StripeMock{URL: "http://" + addrs[0], Logs: &SyncBuffer{}, exited: make(chan struct{})}
	m.cmd = exec.Command(bin, "-http-addr", addrs[0], "-https-addr", addrs[1])
	m.cmd.Stdout, m.cmd.Stderr = m.Logs, m.Logs
	if err := m.cmd.Start(); err != nil {
		tb.Fatalf("start stripe-mock: %v", err)
	}
	go func() {
		_ = m.cmd.Wait()
		close(m.exited)
	}()
	tb.Cleanup(m.Stop)
	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-m.exited:
			tb.Fatalf("stripe-mock exited:\n%s", m.Logs.String())
		default:
		}
		resp, err := client.Get(m.URL + "/v1/payment_methods/pm_ping")
		if err == nil {
			resp.Body.Close()
			return m
		}
	}
	tb.Fatalf("stripe-mock on %s did not answer:\n%s", addrs[0], m.Logs.String())
	return nil
}

// Stop kills the server and waits for it to exit.
func (m *StripeMock) Stop() {
	select {
	case <-m.exited:
	default:
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
}

// WithStripe configures the STRIPE vendor at url with StripeTestKey.
func WithStripe(url string) StackOption {
	return func(c *config.Config) {
		c.StripeAPIKey = StripeTestKey
		c.StripeAPIURL = url
	}
}

// Fault is what FaultProxy does with one request instead of (or before)
// forwarding it: wait Delay (or until the client gives up), call
// AfterDelay with the time the request arrived, then answer Status with
// Body, or forward when Status is 0.
type Fault struct {
	Status     int
	Body       string
	Delay      time.Duration
	AfterDelay func(arrived time.Time)
}

// Stripe-style failures for FaultProxy.
var (
	StripeUnavailable = Fault{Status: http.StatusServiceUnavailable,
		Body: `{"error":{"type":"api_error","message":"The service is temporarily unavailable."}}`}
	StripeMissing = Fault{Status: http.StatusNotFound,
		Body: `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such object."}}`}
	StripeUnauthorized = Fault{Status: http.StatusUnauthorized,
		Body: `{"error":{"type":"invalid_request_error","message":"Invalid API Key provided."}}`}
)

// FaultProxy is a reverse proxy in front of a vendor (stripe-mock) that
// injects failures: the next n requests, or every request until Reset.
type FaultProxy struct {
	URL    string
	mu     sync.Mutex
	queue  []Fault
	always *Fault
	hits   atomic.Int64
}

// NewFaultProxy forwards to target and is closed when tb ends.
func NewFaultProxy(tb testing.TB, target string) *FaultProxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &FaultProxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		arrived := time.Now()
		if f, ok := p.next(); ok {
			if f.Delay > 0 {
				select {
				case <-time.After(f.Delay):
				case <-r.Context().Done():
					return
				}
			}
			if f.AfterDelay != nil {
				f.AfterDelay(arrived)
			}
			if f.Status != 0 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(f.Status)
				_, _ = io.WriteString(w, f.Body)
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *FaultProxy) next() (Fault, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) > 0 {
		f := p.queue[0]
		p.queue = p.queue[1:]
		return f, true
	}
	if p.always != nil {
		return *p.always, true
	}
	return Fault{}, false
}

// FailNext applies f to the next n requests.
func (p *FaultProxy) FailNext(n int, f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range n {
		p.queue = append(p.queue, f)
	}
}

// FailAlways applies f to every request until Reset.
func (p *FaultProxy) FailAlways(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.always = &f
}

// Reset forwards every request again.
func (p *FaultProxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue, p.always = nil, nil
}

// Hits counts the requests that reached the proxy.
func (p *FaultProxy) Hits() int64 { return p.hits.Load() }
