/*
Copyright 2026 The bindgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package webhookclient

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

// ErrForbiddenDestination is wrapped by every error that refuses a webhook
// destination: a scheme other than https, or an address in a refused range
// (see Destinations). Test for it with errors.Is.
var ErrForbiddenDestination = errors.New("forbidden webhook destination")

// refusedRange is a range of addresses webhooks may not reach by default.
type refusedRange struct {
	prefix netip.Prefix
	what   string
	// linkLocal: AllowLinkLocal lifts the refusal.
	linkLocal bool
}

// refusedRanges are the destinations no policy author may point the
// operator at unless the operator's flags allow them: the operator's own
// host (loopback, unspecified), link-local and cloud-metadata addresses,
// multicast and broadcast.
var refusedRanges = []refusedRange{
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback", false},
	{netip.MustParsePrefix("::1/128"), "loopback", false},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified", false},
	{netip.MustParsePrefix("::/128"), "unspecified", false},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local/metadata", true}, // incl. 169.254.169.254
	{netip.MustParsePrefix("fe80::/10"), "link-local/metadata", true},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "link-local/metadata", true}, // AWS IMDS over IPv6
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast", false},
	{netip.MustParsePrefix("ff00::/8"), "multicast", false},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast", false},
}

// Destinations says which addresses webhooks may reach. By default every
// address outside the refused ranges (loopback, unspecified, link-local,
// cloud metadata, multicast, broadcast).
type Destinations struct {
	// AllowLinkLocal lets webhooks reach link-local and cloud-metadata
	// addresses (169.254.0.0/16, fe80::/10, fd00:ec2::254).
	AllowLinkLocal bool
	// AllowCIDRs are ranges allowed even inside a refused range (e.g.
	// 127.0.0.0/8 for a receiver on the operator's own host).
	AllowCIDRs []netip.Prefix
}

// ParseCIDRs parses a comma-separated list of CIDRs (an empty string is
// none); the error names the one that does not parse.
func ParseCIDRs(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR (e.g. 10.0.0.0/8, fd00::/8): %w", f, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// check refuses ip when it lies in a refused range that d does not allow.
// IPv4-mapped IPv6 addresses are checked as IPv4.
func (d Destinations) check(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	for _, p := range d.AllowCIDRs {
		if p.Contains(ip) {
			return nil
		}
	}
	for _, r := range refusedRanges {
		if r.prefix.Contains(ip) && (!r.linkLocal || !d.AllowLinkLocal) {
			return fmt.Errorf("%w: refusing to call %s address %s", ErrForbiddenDestination, r.what, ip)
		}
	}
	return nil
}

// ValidateURL checks statically what can be checked without resolving names:
// the URL is absolute, its scheme is https, it has a host and no user info,
// and, when the host is a literal IP, that d allows it. Host names are
// checked again on every dial, after resolution, by the Client. Refusals
// wrap ErrForbiddenDestination.
func ValidateURL(raw string, d Destinations) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid webhook url: %w", err)
	}
	if !strings.EqualFold(u.Scheme, "https") {
		return fmt.Errorf("%w: webhook url must use https, got scheme %q", ErrForbiddenDestination, u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("invalid webhook url %q: missing host", u.Redacted())
	}
	if u.User != nil {
		return fmt.Errorf("invalid webhook url %q: user info is not allowed (use signingSecretRef)", u.Redacted())
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return d.check(ip)
	}
	return nil
}

// dialControl returns a net.Dialer Control hook that refuses forbidden
// destinations. It runs after name resolution and before connect, so a DNS
// name that points at a refused address is refused and no packet is sent.
func dialControl(d Destinations) func(network, address string, c syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return fmt.Errorf("%w: cannot parse dial address %q: %w", ErrForbiddenDestination, address, err)
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return fmt.Errorf("%w: dial address %q is not an IP: %w", ErrForbiddenDestination, address, err)
		}
		return d.check(ip)
	}
}

// URLOf is the address a webhook is called at: its url, or for a Service
// reference https://<name>.<namespace>.svc:<port><path> (port 443 and path
// / by default), whose certificate must name <name>.<namespace>.svc.
func URLOf(wh *bindgatev1alpha1.Webhook) string {
	if wh.Service == nil {
		return wh.URL
	}
	port := int32(443)
	if wh.Service.Port != nil {
		port = *wh.Service.Port
	}
	path := wh.Service.Path
	if path == "" {
		path = "/"
	}
	u := url.URL{Scheme: "https", Host: net.JoinHostPort(wh.Service.Name+"."+wh.Service.Namespace+".svc", strconv.Itoa(int(port))), Path: path}
	return u.String()
}
