package console_test

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// The login throttle used to be keyed on the peer address alone: behind a
// proxy one attacker locked every operator out. It is keyed per client and
// login name, the client taken from X-Forwarded-For only when the peer is a
// trusted proxy (TRUSTED_PROXIES).
func TestLoginThrottlePerClientAndName(t *testing.T) {
	st, srv := consoleStack(t, func(c *testutil.StackConfig) { c.TrustedProxies = []string{"127.0.0.1"} })
	alicePW, bobPW := operator(t, st.DB, "alice"), operator(t, st.DB, "bob")
	login := func(b *browser, name, pw string, hdr ...string) int {
		t.Helper()
		form := url.Values{"name": {name}, "password": {pw}, "csrf_token": {b.token("/login")}}
		return b.do(http.MethodPost, "/login", form, hdr...).Status
	}
	// From 127.0.0.2: a peer that is not a trusted proxy.
	untrusted := func() *browser {
		b := newBrowser(t, srv.URL)
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
		b.c.Transport = &http.Transport{DialContext: d.DialContext}
		return b
	}

	// Through the proxy, an attacker at 203.0.113.9 exhausts alice's tries.
	attacker := newBrowser(t, srv.URL)
	testutil.FailUntilThrottled(t, 10, func(i int) bool {
		s := login(attacker, "alice", "wrong "+strconv.Itoa(i), "X-Forwarded-For", "203.0.113.9")
		if s != http.StatusUnauthorized && s != http.StatusTooManyRequests {
			t.Fatalf("wrong password %d: %d", i, s)
		}
		return s == http.StatusTooManyRequests
	})
	if s := login(attacker, "alice", alicePW, "X-Forwarded-For", "203.0.113.9"); s != http.StatusTooManyRequests {
		t.Fatalf("attacker's 11th try: %d, want 429", s)
	}
	// The same proxy, another client: alice logs in.
	if s := login(newBrowser(t, srv.URL), "alice", alicePW, "X-Forwarded-For", "198.51.100.7"); s != http.StatusSeeOther {
		t.Fatalf("alice from another client behind the proxy: %d, want 303", s)
	}
	// The attacker's address, another name: bob logs in.
	if s := login(newBrowser(t, srv.URL), "bob", bobPW, "X-Forwarded-For", "203.0.113.9"); s != http.StatusSeeOther {
		t.Fatalf("bob from the attacker's address: %d, want 303", s)
	}

	// A peer that is no trusted proxy cannot dodge the throttle by sending
	// a new X-Forwarded-For each time: its own address is the client.
	spoofer := untrusted()
	testutil.FailUntilThrottled(t, 10, func(i int) bool {
		s := login(spoofer, "bob", "wrong "+strconv.Itoa(i), "X-Forwarded-For", "192.0.2."+strconv.Itoa(1+i))
		if s != http.StatusUnauthorized && s != http.StatusTooManyRequests {
			t.Fatalf("spoofer's wrong password %d: %d", i, s)
		}
		return s == http.StatusTooManyRequests
	})
	if s := login(spoofer, "bob", bobPW, "X-Forwarded-For", "192.0.2.200"); s != http.StatusTooManyRequests {
		t.Fatalf("spoofer's 11th try with a fresh X-Forwarded-For: %d, want 429", s)
	}
}
