package calin

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
	calinsim "github.com/heraldmq/herald/sim/calin"
)

// garbage are vendor answers that are not the API's.
var garbage = []struct {
	name        string
	status      int
	contentType string
	body        string
	quoted      string // what the error must quote
}{
	{"html error page", http.StatusBadGateway, "text/html", "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>", "502 Bad Gateway"},
	{"html page with 200", http.StatusOK, "text/html; charset=utf-8", "<!DOCTYPE html><html><body>Login to the portal</body></html>", "Login to the portal"},
	{"empty body", http.StatusOK, "application/json", "", "empty body"},
	{"wrong json shape", http.StatusOK, "application/json", `{"data":[1,2,3],"ok":true}`, `{"data":[1,2,3],"ok":true}`},
	{"json array", http.StatusOK, "application/json", `[{"id":1}]`, `[{"id":1}]`},
	{"10 MiB body", http.StatusOK, "application/json", `{"x":"` + strings.Repeat("A", 10<<20) + `"}`, "over 65536 bytes"},
	{"500 with text", http.StatusInternalServerError, "text/plain", "upstream exploded\n\tat Calin.Api.Foo()", "upstream exploded at Calin.Api.Foo()"},
}

// TestGarbageAnswersAreTransientErrorsQuotingTheBody: whatever a create or
// a poll is answered instead of the API's JSON is a transient error (a
// poll error for a poll) that quotes the start of the body, never a panic
// and never a success.
func TestGarbageAnswersAreTransientErrorsQuotingTheBody(t *testing.T) {
	for _, version := range []calinsim.API{calinsim.V1, calinsim.V2} {
		for _, g := range garbage {
			t.Run(string(version)+"/"+g.name, func(t *testing.T) {
				clk := clock.NewFake(t0)
				_, url := startSim(t, calinsim.Config{API: version}, clk, func(h http.Handler) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						if strings.HasSuffix(r.URL.Path, "/Login") {
							h.ServeHTTP(w, r)
							return
						}
						w.Header().Set("Content-Type", g.contentType)
						w.WriteHeader(g.status)
						w.Write([]byte(g.body))
					})
				})
				c, params := simCarrier(t, version, url, clk)
				m := &herald.Message{ID: "g", Target: "47001", Text: "x", Params: params, Attempt: 1}
				_, err := c.(herald.Resumer).SendResumable(context.Background(), m, func(id string) error { m.ExternalID = id; return nil })
				check := func(what string, err error) {
					t.Helper()
					switch {
					case err == nil:
						t.Fatalf("%s: no error", what)
					case isPermanent(err):
						t.Fatalf("%s: permanent: %v", what, err)
					case !strings.Contains(err.Error(), g.quoted):
						t.Fatalf("%s: %v, want it to quote %q", what, err, g.quoted)
					case len(err.Error()) > 600:
						t.Fatalf("%s: an error of %d bytes", what, len(err.Error()))
					}
				}
				check("create", err)
				if m.ExternalID != "calin:not-created:1" {
					t.Errorf("external id %q: want the message marked not created", m.ExternalID)
				}
				m.ExternalID = "1001"
				res, _, err := c.(herald.Poller).Poll(context.Background(), m)
				if res != herald.PollPending {
					t.Fatalf("poll: %v, want pending (a poll error)", res)
				}
				check("poll", err)
			})
		}
	}
}

// TestGatewayTimeoutOnCreateIsInDoubt: a 504 says a gateway stopped
// waiting for the vendor, which may still create the task: the message
// fails in doubt rather than risk a second task. On a poll it is a poll
// error like any other.
func TestGatewayTimeoutOnCreateIsInDoubt(t *testing.T) {
	clk := clock.NewFake(t0)
	_, url := startSim(t, calinsim.Config{API: calinsim.V1}, clk, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "<html><body>504 Gateway Time-out</body></html>", http.StatusGatewayTimeout)
		})
	})
	c := newV1(t, url, clk)
	m := msg("47001", "command=reading", "data_item=Voltage")
	_, err := c.SendResumable(context.Background(), m, func(id string) error { m.ExternalID = id; return nil })
	if !isPermanent(err) || !strings.Contains(err.Error(), "may have created a task") || m.ExternalID != "calin:creating:1" {
		t.Fatalf("create answered 504: %v, external id %q", err, m.ExternalID)
	}
	m.ExternalID = "1001"
	if res, _, err := c.Poll(context.Background(), m); res != herald.PollPending || err == nil || isPermanent(err) {
		t.Fatalf("poll answered 504: %v, %v", res, err)
	}
}
