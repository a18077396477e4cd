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
	"strings"
	"syscall"
)

// ErrForbiddenDestination is wrapped by every error that refuses a webhook
// destination: a scheme other than https, or a link-local / cloud-metadata
// address when Options.AllowLinkLocal is false. Test for it with errors.Is.
var ErrForbiddenDestination = errors.New("forbidden webhook destination")

// forbiddenPrefixes are the link-local and cloud-metadata ranges that a
// webhook may not reach unless AllowLinkLocal is set.
var forbiddenPrefixes = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),    // IPv4 link-local, incl. 169.254.169.254 metadata
	netip.MustParsePrefix("fe80::/10"),         // IPv6 link-local
	netip.MustParsePrefix("fd00:ec2::254/128"), // AWS IMDS over IPv6
}

// isForbiddenAddr reports whether ip is a link-local or metadata address.
// IPv4-mapped IPv6 addresses are checked as IPv4.
func isForbiddenAddr(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	for _, p := range forbiddenPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// forbiddenAddrError builds the error returned for a refused address.
func forbiddenAddrError(ip netip.Addr) error {
	return fmt.Errorf("%w: refusing to call link-local/metadata address %s", ErrForbiddenDestination, ip.Unmap())
}

// ValidateURL checks statically what can be checked without resolving names:
// the URL is absolute, its scheme is https, it has a host, and, when the host
// is a literal IP, that IP is not link-local or a cloud-metadata address
// (unless allowLinkLocal). Host names are checked again on every dial, after
// resolution, by the Client. Refusals wrap ErrForbiddenDestination.
func ValidateURL(raw string, allowLinkLocal bool) error {
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
	if allowLinkLocal {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && isForbiddenAddr(ip) {
		return forbiddenAddrError(ip)
	}
	return nil
}

// dialControl returns a net.Dialer Control hook that refuses forbidden
// destinations. It runs after name resolution and before connect, so a DNS
// name that points at a metadata address is refused and no packet is sent.
func dialControl(allowLinkLocal bool) func(network, address string, c syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		if allowLinkLocal {
			return nil
		}
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return fmt.Errorf("%w: cannot parse dial address %q: %w", ErrForbiddenDestination, address, err)
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return fmt.Errorf("%w: dial address %q is not an IP: %w", ErrForbiddenDestination, address, err)
		}
		if isForbiddenAddr(ip) {
			return forbiddenAddrError(ip)
		}
		return nil
	}
}
