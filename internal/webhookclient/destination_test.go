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
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	bindgatev1alpha1 "github.com/bindgate/bindgate/api/v1alpha1"
)

func TestValidateURL(t *testing.T) {
	loopback := Destinations{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	cases := map[string]struct {
		url           string
		dest          Destinations
		wantErr       string // "" means valid
		wantForbidden bool
	}{
		"https host name":          {url: "https://hooks.example.com/permit"},
		"https with port and path": {url: "https://hooks.example.com:8443/a/b?x=1"},
		"https private address":    {url: "https://10.0.0.7/"},
		"address next to link-local": {
			url: "https://169.253.255.255/",
		},
		"upper-case scheme": {url: "HTTPS://hooks.example.com/"},
		"http refused": {
			url: "http://hooks.example.com/", wantErr: `must use https, got scheme "http"`, wantForbidden: true,
		},
		"no scheme refused": {
			url: "hooks.example.com/permit", wantErr: `must use https, got scheme ""`, wantForbidden: true,
		},
		"missing host": {url: "https:///path", wantErr: "missing host"},
		"user info":    {url: "https://admin:secret@hooks.example.com/", wantErr: "user info is not allowed"},
		"unparsable":   {url: "https://[::1", wantErr: "invalid webhook url"},
		"loopback refused": {
			url: "https://127.0.0.1:9443/", wantForbidden: true, wantErr: "refusing to call loopback address 127.0.0.1",
		},
		"loopback allowed by CIDR": {url: "https://127.0.0.1:9443/", dest: loopback},
		"IPv6 loopback refused": {
			url: "https://[::1]/", wantForbidden: true, wantErr: "refusing to call loopback address ::1",
		},
		"unspecified refused": {
			url: "https://0.0.0.0/", wantForbidden: true, wantErr: "refusing to call unspecified address 0.0.0.0",
		},
		"IPv6 unspecified refused": {
			url: "https://[::]/", wantForbidden: true, wantErr: "refusing to call unspecified address ::",
		},
		"multicast refused": {
			url: "https://224.0.0.1/", wantForbidden: true, wantErr: "refusing to call multicast address 224.0.0.1",
		},
		"IPv6 multicast refused": {
			url: "https://[ff02::1]/", wantForbidden: true, wantErr: "refusing to call multicast address ff02::1",
		},
		"broadcast refused": {
			url: "https://255.255.255.255/", wantForbidden: true, wantErr: "refusing to call broadcast address 255.255.255.255",
		},
		"IPv4 metadata refused": {
			url: "https://169.254.169.254/latest/meta-data", wantForbidden: true,
			wantErr: "refusing to call link-local/metadata address 169.254.169.254",
		},
		"IPv4 link-local refused": {
			url: "https://169.254.1.2:443/", wantForbidden: true,
			wantErr: "refusing to call link-local/metadata address 169.254.1.2",
		},
		"IPv6 link-local refused": {
			url: "https://[fe80::1]/", wantForbidden: true,
			wantErr: "refusing to call link-local/metadata address fe80::1",
		},
		"IPv6 link-local with zone refused": {
			url: "https://[fe80::1%25eth0]/", wantForbidden: true,
			wantErr: "refusing to call link-local/metadata address fe80::1",
		},
		"AWS IPv6 metadata refused": {
			url: "https://[fd00:ec2::254]/", wantForbidden: true,
			wantErr: "refusing to call link-local/metadata address fd00:ec2::254",
		},
		"IPv4-mapped metadata refused": {
			url: "https://[::ffff:169.254.169.254]/", wantForbidden: true,
			wantErr: "refusing to call link-local/metadata address 169.254.169.254",
		},
		"IPv4-mapped loopback refused": {
			url: "https://[::ffff:127.0.0.1]/", wantForbidden: true,
			wantErr: "refusing to call loopback address 127.0.0.1",
		},
		"metadata allowed when link-local is allowed": {
			url: "https://169.254.169.254/", dest: Destinations{AllowLinkLocal: true},
		},
		"loopback still refused when link-local is allowed": {
			url: "https://127.0.0.1/", dest: Destinations{AllowLinkLocal: true}, wantForbidden: true,
			wantErr: "refusing to call loopback address",
		},
		"http refused even when link-local is allowed": {
			url: "http://169.254.169.254/", dest: Destinations{AllowLinkLocal: true}, wantErr: "must use https", wantForbidden: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := ValidateURL(tc.url, tc.dest)
			checkErr(t, err, tc.wantErr, tc.wantForbidden)
		})
	}
}

func TestDialControl(t *testing.T) {
	loopback := Destinations{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}}
	cases := map[string]struct {
		address       string
		dest          Destinations
		wantErr       string
		wantForbidden bool
	}{
		"loopback":              {address: "127.0.0.1:443", wantErr: "loopback address 127.0.0.1", wantForbidden: true},
		"IPv6 loopback":         {address: "[::1]:443", wantErr: "loopback address ::1", wantForbidden: true},
		"loopback allowed":      {address: "127.0.0.1:443", dest: loopback},
		"IPv6 loopback allowed": {address: "[::1]:443", dest: loopback},
		"other loopback still refused": {
			address: "127.0.0.2:443", dest: loopback, wantErr: "loopback address 127.0.0.2", wantForbidden: true,
		},
		"unspecified":        {address: "0.0.0.0:443", wantErr: "unspecified address 0.0.0.0", wantForbidden: true},
		"multicast":          {address: "239.1.2.3:443", wantErr: "multicast address 239.1.2.3", wantForbidden: true},
		"public":             {address: "203.0.113.10:8443"},
		"private":            {address: "10.1.2.3:8443"},
		"metadata":           {address: "169.254.169.254:80", wantErr: "address 169.254.169.254", wantForbidden: true},
		"IPv6 link-local":    {address: "[fe80::abcd%eth0]:443", wantErr: "address fe80::abcd", wantForbidden: true},
		"AWS IPv6 metadata":  {address: "[fd00:ec2::254]:80", wantErr: "address fd00:ec2::254", wantForbidden: true},
		"IPv4-mapped":        {address: "[::ffff:169.254.169.254]:80", wantErr: "address 169.254.169.254", wantForbidden: true},
		"allowed link-local": {address: "169.254.169.254:80", dest: Destinations{AllowLinkLocal: true}},
		"not an IP":          {address: "metadata.internal:80", wantErr: "is not an IP", wantForbidden: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := dialControl(tc.dest)("tcp", tc.address, nil)
			checkErr(t, err, tc.wantErr, tc.wantForbidden)
		})
	}
}

func TestParseCIDRs(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []netip.Prefix
		wantErr string
	}{
		"empty":        {},
		"two, spaced":  {in: "127.0.0.1/32, ::1/128", want: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}},
		"masked":       {in: "10.1.2.3/8", want: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}},
		"not a CIDR":   {in: "127.0.0.1", wantErr: `"127.0.0.1" is not a CIDR`},
		"junk in list": {in: "10.0.0.0/8,nope", wantErr: `"nope" is not a CIDR`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseCIDRs(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// checkErr compares err with an expected substring and sentinel.
func checkErr(t *testing.T, err error, wantErr string, wantForbidden bool) {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want %q", wantErr)
	}
	if !strings.Contains(err.Error(), wantErr) {
		t.Errorf("error = %q, want it to contain %q", err, wantErr)
	}
	if got := errors.Is(err, ErrForbiddenDestination); got != wantForbidden {
		t.Errorf("errors.Is(err, ErrForbiddenDestination) = %v, want %v", got, wantForbidden)
	}
}

func TestURLOf(t *testing.T) {
	cases := map[string]struct {
		wh   bindgatev1alpha1.Webhook
		want string
	}{
		"url":                {wh: bindgatev1alpha1.Webhook{URL: "https://hooks.example.com/x"}, want: "https://hooks.example.com/x"},
		"service, defaults":  {wh: bindgatev1alpha1.Webhook{Service: &bindgatev1alpha1.ServiceReference{Namespace: "ops", Name: "approver"}}, want: "https://approver.ops.svc:443/"},
		"service, port+path": {wh: bindgatev1alpha1.Webhook{Service: &bindgatev1alpha1.ServiceReference{Namespace: "ops", Name: "approver", Port: new(int32(8443)), Path: "/permit/v1"}}, want: "https://approver.ops.svc:8443/permit/v1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, URLOf(&tc.wh)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if err := ValidateURL(URLOf(&tc.wh), Destinations{}); err != nil {
				t.Errorf("ValidateURL: %v", err)
			}
		})
	}
}
