package webhook_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/webhook"
)

func TestIsPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "1.1.1.1": true, "2606:4700:4700::1111": true, "151.101.1.69": true,
		"127.0.0.1": false, "127.8.9.10": false, "::1": false, "10.0.0.1": false, "10.255.255.255": false,
		"172.16.0.1": false, "172.31.255.1": false, "192.168.1.1": false, "169.254.169.254": false,
		"fe80::1": false, "fc00::1": false, "fd12:3456::1": false, "100.64.0.1": false, "100.127.255.254": false,
		"224.0.0.1": false, "ff02::1": false, "0.0.0.0": false, "::": false, "255.255.255.255": false,
		"::ffff:127.0.0.1": false, "::ffff:10.1.2.3": false, "::ffff:8.8.8.8": true, "192.0.2.1": false,
		"198.18.0.1": false, "240.0.0.1": false, "64:ff9b::a00:1": false, "2002:a00:1::": false,
	} {
		if got := webhook.IsPublic(netip.MustParseAddr(addr)); got != want {
			t.Errorf("IsPublic(%s) = %t, want %t", addr, got, want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	ctx := context.Background()
	strict, lax := webhook.Guard{}, webhook.Guard{AllowPrivate: true}
	for _, c := range []struct {
		url         string
		strict, lax bool // accepted?
	}{
		{"https://8.8.8.8/hook", true, true},
		{"https://[2606:4700:4700::1111]:8443/hook", true, true},
		{"http://8.8.8.8/hook", false, true},
		{"https://127.0.0.1/hook", false, true},
		{"https://10.1.2.3/hook", false, true},
		{"https://[::1]/hook", false, true},
		{"https://169.254.169.254/latest/meta-data", false, true},
		{"https://100.64.1.1/", false, true},
		{"https://localhost/hook", false, true},
		{"https://api.localhost/hook", false, true},
		{"ftp://8.8.8.8/", false, false},
		{"https:///nohost", false, false},
		{"https://user:pw@8.8.8.8/", false, false},
		{"https://8.8.8.8/#frag", false, false},
		{"not a url", false, false},
	} {
		_, err := strict.CheckURL(ctx, c.url)
		if (err == nil) != c.strict {
			t.Errorf("strict %s: err %v, want accepted=%t", c.url, err, c.strict)
		}
		if err != nil && !errors.Is(err, webhook.ErrRefusedTarget) {
			t.Errorf("strict %s: %v is not ErrRefusedTarget", c.url, err)
		}
		// Every refusal says how a local receiver is allowed, not only some.
		if err != nil && !strings.Contains(err.Error(), "WEBHOOK_ALLOW_PRIVATE") {
			t.Errorf("strict %s: %q does not name WEBHOOK_ALLOW_PRIVATE", c.url, err)
		}
		if _, err := lax.CheckURL(ctx, c.url); (err == nil) != c.lax {
			t.Errorf("allow-private %s: err %v, want accepted=%t", c.url, err, c.lax)
		}
	}
}

func TestControlChecksTheDialledAddress(t *testing.T) {
	g := webhook.Guard{}
	for addr, ok := range map[string]bool{"8.8.8.8:443": true, "127.0.0.1:443": false, "[::1]:443": false, "10.0.0.7:8443": false,
		"[::ffff:192.168.0.1]:443": false, "nonsense": false} {
		if err := g.Control("tcp", addr, nil); (err == nil) != ok {
			t.Errorf("Control(%s): %v, want ok=%t", addr, err, ok)
		}
	}
	if err := (webhook.Guard{AllowPrivate: true}).Control("tcp", "127.0.0.1:443", nil); err != nil {
		t.Errorf("allow-private refused loopback: %v", err)
	}
}

func TestSchedule(t *testing.T) {
	s := webhook.DefaultSchedule
	total := s.Total().Hours()
	if total < 22 || total > 26 {
		t.Errorf("default schedule spans %.1f h, want about 24 h", total)
	}
	if s.Delay(1).Seconds() != 10 || s.Delay(2).Seconds() != 30 || s.Delay(10) != s.Cap {
		t.Errorf("delays %v %v %v", s.Delay(1), s.Delay(2), s.Delay(10))
	}
	for n := 1; n < s.MaxAttempts; n++ {
		d, ok := s.Next(n)
		nominal := s.Delay(n)
		if !ok || d < nominal*8/10 || d > nominal*12/10 {
			t.Errorf("Next(%d) = %v, %t; nominal %v ± 20%%", n, d, ok, nominal)
		}
	}
	if _, ok := s.Next(s.MaxAttempts); ok {
		t.Error("a retry after the last attempt")
	}
	scaled := webhook.ScaledSchedule(10 * 1e6) // 10 ms
	if scaled.Total()*1000 != s.Total() {
		t.Errorf("scaled schedule %v is not the default / 1000 (%v)", scaled.Total(), s.Total())
	}
}
