package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldmq/herald/config"
	"github.com/heraldmq/herald/ui"
)

// TestServeMountsTheAdminPage: herald serve serves the page at /ui, whose
// login cookie the API takes, unless the config says ui: false.
func TestServeMountsTheAdminPage(t *testing.T) {
	for _, on := range []bool{true, false} {
		yaml := "listen: 127.0.0.1:0\nstore: sqlite:" + filepath.Join(t.TempDir(), "herald.db") + "\n" +
			"api_keys: [{key: k1, tenant: acme}]\n" +
			"routes: [{name: hooks, carrier: webhook, url: \"http://127.0.0.1:9/in\"}]\n"
		if !on {
			yaml += "ui: false\n"
		}
		f, err := config.Parse([]byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		s, err := startServer(context.Background(), f, false, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		base := "http://" + s.addr
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

		resp, err := client.Get(base + "/ui")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if !on {
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("ui: false: GET /ui = %d, want 404", resp.StatusCode)
			}
			if err := s.shutdown(); err != nil {
				t.Error(err)
			}
			continue
		}
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
			t.Errorf("GET /ui without a session = %d to %q, want 303 to /ui/login", resp.StatusCode, resp.Header.Get("Location"))
		}
		req, _ := http.NewRequest("POST", base+"/ui/login", strings.NewReader(url.Values{"key": {"k1"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		resp, err = client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var cookie *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == ui.CookieName {
				cookie = c
			}
		}
		if resp.StatusCode != http.StatusSeeOther || cookie == nil {
			t.Fatalf("login = %d with cookie %v, want 303 and a session cookie", resp.StatusCode, cookie)
		}
		req, _ = http.NewRequest("GET", base+"/v1/stats", nil)
		req.AddCookie(cookie)
		resp, err = client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /v1/stats with the session cookie = %d, want 200", resp.StatusCode)
		}
		if err := s.shutdown(); err != nil {
			t.Error(err)
		}
	}
}
