package httpsend

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// TestEgressRefusesInsideAddresses refuses the loopback, link-local,
// private, multicast and other special ranges, mapped IPv4 included, and
// lets public addresses and allowed networks through.
func TestEgressRefusesInsideAddresses(t *testing.T) {
	e := &Egress{}
	for _, s := range []string{"127.0.0.1", "127.8.9.10", "169.254.169.254", "10.1.2.3", "172.16.0.1", "172.31.255.255",
		"192.168.1.1", "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fd00::1",
		"ff02::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe"} {
		err := e.CheckAddr(netip.MustParseAddr(s))
		var r *RefusedError
		if !errors.As(err, &r) {
			t.Errorf("%s: %v, want refused", s, err)
		}
	}
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700::1111", "192.0.2.1"} {
		if err := e.CheckAddr(netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s: %v, want allowed", s, err)
		}
	}
	var told []string
	allowed := &Egress{Allow: []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16"), netip.MustParsePrefix("::1/128")},
		OnRefuse: func(a netip.Addr, kind string) { told = append(told, a.String()+" "+kind) }}
	for _, s := range []string{"10.20.3.4", "::1", "::ffff:10.20.0.1"} {
		if err := allowed.CheckAddr(netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s with an allow list: %v", s, err)
		}
	}
	if err := allowed.CheckAddr(netip.MustParseAddr("10.21.0.1")); err == nil || !strings.Contains(err.Error(), "10.21.0.1 is private") {
		t.Errorf("10.21.0.1 outside the allow list: %v", err)
	}
	if len(told) != 1 || told[0] != "10.21.0.1 private" {
		t.Errorf("OnRefuse told %q", told)
	}
}

// TestEgressCheckURL refuses a URL naming a refused address, and leaves
// names to the connection.
func TestEgressCheckURL(t *testing.T) {
	e := &Egress{}
	for _, u := range []string{"http://127.0.0.1:8080/hook", "http://169.254.169.254/latest/meta-data/", "https://[::1]/x",
		"http://[fe80::1%25eth0]/", "http://0.0.0.0:80/"} {
		if err := e.CheckURL(u); err == nil {
			t.Errorf("%s: accepted", u)
		}
	}
	for _, u := range []string{"https://example.com/hook", "http://localhost:8080/", "http://93.184.216.34/", "::not a url"} {
		if err := e.CheckURL(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}

// TestEgressClientChecksTheConnection refuses a connection to a loopback
// server whether the URL names its address or a name that resolves to it,
// as a permanent failure that says why; an allow list lets it through.
func TestEgressClientChecksTheConnection(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer srv.Close()
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	for _, u := range []string{srv.URL, "http://localhost:" + port + "/"} {
		req, _ := http.NewRequest("POST", u, nil)
		_, err := DoTenant((&Egress{}).Client(), req, time.Now)
		var perm *herald.PermanentError
		if !errors.As(err, &perm) || !strings.Contains(err.Error(), "refused by the egress policy") {
			t.Errorf("POST %s: %v, want a permanent refusal", u, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the server was reached %d times", hits.Load())
	}
	allow := &Egress{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	req, _ := http.NewRequest("POST", "http://localhost:"+port+"/", nil)
	if _, err := DoTenant(allow.Client(), req, time.Now); err != nil || hits.Load() != 1 {
		t.Fatalf("allowed: %v, %d hits", err, hits.Load())
	}
}

// TestDoTenantQuotesLittle quotes the status code with its standard text
// and a short printable excerpt of a body that is not HTML, nothing of an
// HTML body nor of the reason phrase, where Do quotes more.
func TestDoTenantQuotesLittle(t *testing.T) {
	cases := []struct {
		status      int
		ctype, body string
		want        string
	}{
		{400, "application/json", `{"error":"bad  order"}` + "\x00\x1b[31m\n", `400 Bad Request: {"error":"bad order"}[31m`},
		{502, "text/html", "<html>internal admin page</html>", "502 Bad Gateway"},
		{500, "text/plain", "  <!doctype html><p>secret</p>", "500 Internal Server Error"},
		{404, "text/plain", strings.Repeat("x", 500), "404 Not Found: " + strings.Repeat("x", TenantExcerptLen)},
		{302, "text/plain", "moved", "302 Found"},
	}
	for _, c := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", c.ctype)
			w.WriteHeader(c.status)
			w.Write([]byte(c.body))
		}))
		req, _ := http.NewRequest("POST", srv.URL, nil)
		_, err := DoTenant(NewClient(), req, time.Now)
		srv.Close()
		if err == nil {
			t.Fatalf("%d: no error", c.status)
		}
		got := err.Error()[strings.Index(err.Error(), srv.URL)+len(srv.URL)+2:]
		if got != c.want {
			t.Errorf("%d %s: error ends %q, want %q", c.status, c.ctype, got, c.want)
		}
	}
}
