// Package webhook is the sending side of partner webhooks (CONTRACT §9): the
// SSRF guard, the signed HTTP request, the client that sends it and the
// retry schedule. Signing is the Standard Webhooks specification's own
// library; everything about where a request may go is decided here, in one
// place, both when an endpoint is registered and when a connection is dialled.
package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// ErrRefusedTarget is wrapped by every refusal of the guard.
var ErrRefusedTarget = errors.New("webhook target refused")

// nonPublic are the ranges a webhook may never reach unless the operator
// allows private targets: besides what netip classifies (loopback, private,
// link-local, multicast, unspecified), carrier-grade NAT, "this network",
// benchmarking, documentation, IETF protocol assignments, reserved space and
// the NAT64/6to4/Teredo prefixes that embed an IPv4 address we could not
// check.
var nonPublic = mustPrefixes(
	"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15",
	"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "255.255.255.255/32",
	"64:ff9b::/96", "64:ff9b:1::/48", "2001::/32", "2001:db8::/32", "2002::/16", "100::/64",
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// IsPublic reports whether ip is a public unicast address a webhook may be
// sent to. IPv4-mapped IPv6 addresses are judged as the IPv4 they carry.
func IsPublic(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || !ip.IsGlobalUnicast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// Guard decides which webhook targets are allowed. The zero value refuses
// everything but https URLs resolving to public addresses.
type Guard struct {
	// AllowPrivate (WEBHOOK_ALLOW_PRIVATE) permits loopback and private
	// targets and plain http: local development and tests only.
	AllowPrivate bool
	// Resolver looks host names up; nil means net.DefaultResolver.
	Resolver *net.Resolver
}

// CheckURL validates a URL at registration: absolute, https (http only when
// AllowPrivate), no credentials, and every address its host resolves to is
// public (unless AllowPrivate). The dialler checks again on every
// connection, since DNS may answer differently later.
func (g Guard) CheckURL(ctx context.Context, raw string) (*url.URL, error) {
	u, err := g.checkURL(ctx, raw)
	if err != nil && !g.AllowPrivate {
		// Every refusal names the setting: a partner trying a local receiver
		// must learn from the first answer how the operator allows it.
		return nil, fmt.Errorf("%w (local http targets need WEBHOOK_ALLOW_PRIVATE=true on the service)", err)
	}
	return u, err
}

func (g Guard) checkURL(ctx context.Context, raw string) (*url.URL, error) {
	if len(raw) > 2048 {
		return nil, fmt.Errorf("%w: URL longer than 2048 characters", ErrRefusedTarget)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefusedTarget, err)
	}
	switch {
	case u.Scheme != "https" && !(g.AllowPrivate && u.Scheme == "http"):
		return nil, fmt.Errorf("%w: %q: the URL must be https", ErrRefusedTarget, raw)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("%w: %q: the URL has no host", ErrRefusedTarget, raw)
	case u.User != nil:
		return nil, fmt.Errorf("%w: %q: credentials in the URL are not allowed", ErrRefusedTarget, raw)
	case u.Fragment != "":
		return nil, fmt.Errorf("%w: %q: the URL may not have a fragment", ErrRefusedTarget, raw)
	}
	if g.AllowPrivate {
		return u, nil
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if !IsPublic(ip) {
			return nil, fmt.Errorf("%w: %s is not a public address", ErrRefusedTarget, ip)
		}
		return u, nil
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return nil, fmt.Errorf("%w: %s is not a public host", ErrRefusedTarget, host)
	}
	res := g.Resolver
	if res == nil {
		res = net.DefaultResolver
	}
	addrs, err := res.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("%w: resolve %s: %w", ErrRefusedTarget, host, err)
	}
	for _, a := range addrs {
		if !IsPublic(a) {
			return nil, fmt.Errorf("%w: %s resolves to %s, not a public address", ErrRefusedTarget, host, a.Unmap())
		}
	}
	return u, nil
}

// Control is a net.Dialer Control function: it runs after the name was
// resolved, on the very address about to be connected to, so a DNS answer
// that changed since registration (rebinding) cannot reach a private
// address.
func (g Guard) Control(_, address string, _ syscall.RawConn) error {
	if g.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: dial %s: %w", ErrRefusedTarget, address, err)
	}
	if !IsPublic(ap.Addr()) {
		return fmt.Errorf("%w: dial %s: not a public address", ErrRefusedTarget, ap.Addr().Unmap())
	}
	return nil
}
