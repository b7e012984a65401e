package httpapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/metrics"
)

// inbox returns the events waiting in the fixture's inbox.
func (f *fixture) inbox() []herald.Inbound {
	f.t.Helper()
	evs, err := f.store.Store.ClaimInbound(f.t.Context(), f.clock.Now(), 100, f.clock.Now())
	if err != nil {
		f.t.Fatal(err)
	}
	return evs
}

func TestIngressStoresAnEventBeforeAnswering204(t *testing.T) {
	f := newFixture(t)
	rec := f.do("POST", "/v1/ingress/lora?event=txack", ingressSecret, `{"item":"q-1"}`)
	wantStatus(t, rec, http.StatusNoContent)
	evs := f.inbox()
	if len(evs) != 1 || evs[0].Kind != herald.InboundTransmitted || evs[0].ExternalID != "q-1" || evs[0].Route != "lora" {
		t.Fatalf("inbox after the 204: %+v, want the txack of q-1", evs)
	}
}

func TestIngressRefusesBadInputAndStoresNothing(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name, path, secret, body string
		status                   int
		code                     string
	}{
		{"no secret", "/v1/ingress/lora?event=txack", "", `{}`, http.StatusUnauthorized, codeUnauthorized},
		{"wrong secret", "/v1/ingress/lora?event=txack", "nope", `{}`, http.StatusUnauthorized, codeUnauthorized},
		{"an API key is not the secret", "/v1/ingress/lora?event=txack", keyA, `{}`, http.StatusUnauthorized, codeUnauthorized},
		{"no event type", "/v1/ingress/lora", ingressSecret, `{}`, http.StatusBadRequest, codeMissingField},
		{"unknown event", "/v1/ingress/lora?event=bogus", ingressSecret, `{}`, http.StatusBadRequest, codeInvalidField},
		{"garbage body", "/v1/ingress/lora?event=txack", ingressSecret, `{garbage`, http.StatusBadRequest, codeInvalidField},
		{"10 MiB body", "/v1/ingress/lora?event=txack", ingressSecret, strings.Repeat("x", 10<<20), http.StatusRequestEntityTooLarge, codeBodyTooLarge},
		{"unknown route", "/v1/ingress/nowhere?event=txack", ingressSecret, `{}`, http.StatusNotFound, codeUnknownRoute},
		{"route without events", "/v1/ingress/hooks?event=txack", ingressSecret, `{}`, http.StatusNotFound, codeUnknownRoute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, f.do("POST", tc.path, tc.secret, tc.body), tc.status, tc.code)
		})
	}
	if evs := f.inbox(); len(evs) != 0 {
		t.Fatalf("inbox after refused events: %+v, want empty", evs)
	}
}

func TestIngressIgnoresWhatHeraldHasNoUseFor(t *testing.T) {
	f := newFixture(t)
	wantStatus(t, f.do("POST", "/v1/ingress/lora?event=join", ingressSecret, `{}`), http.StatusNoContent)
	if evs := f.inbox(); len(evs) != 0 {
		t.Fatalf("inbox after a join: %+v, want empty", evs)
	}
}

func TestIngressAnswers503WhenTheStoreCannotKeepTheEvent(t *testing.T) {
	f := newFixture(t)
	f.store.err = errors.New("disk on fire")
	rec := f.do("POST", "/v1/ingress/lora?event=txack", ingressSecret, `{"item":"q-1"}`)
	wantError(t, rec, http.StatusServiceUnavailable, codeStoreUnavailable)
	if rec.Header().Get("Retry-After") == "" {
		t.Error("no Retry-After on the 503")
	}
}

// TestIngressBearerAnyCase: the scheme of the ingress secret's header is
// taken in any case, as RFC 9110 says; the secret itself is not.
func TestIngressBearerAnyCase(t *testing.T) {
	f := newFixture(t)
	for auth, want := range map[string]int{
		"bearer " + ingressSecret: http.StatusNoContent, "BEARER " + ingressSecret: http.StatusNoContent,
		"Bearer " + strings.ToUpper(ingressSecret): http.StatusUnauthorized, "Basic " + ingressSecret: http.StatusUnauthorized,
	} {
		req := httptest.NewRequest("POST", "/v1/ingress/lora?event=join", strings.NewReader(`{}`))
		req.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Authorization %q: %d, want %d: %s", auth, rec.Code, want, rec.Body)
		}
	}
}

// TestIngressCountsAndLogsRefusals: every event the ingress refuses is
// counted in herald_inbound_total{result="refused"} by reason, and the
// log gets a WARN for the route (the first refusal of each, the rest
// counted into its next line, a minute later at the earliest).
func TestIngressCountsAndLogsRefusals(t *testing.T) {
	m := metrics.New()
	f := newObservedFixture(t, m, func(c *Config) { c.Metrics = m.Handler() })
	refused := func(route, reason string) int {
		t.Helper()
		rec := f.do("GET", "/metrics", "", "")
		prefix := `herald_inbound_total{kind="",reason="` + reason + `",result="refused",route="` + route + `"} `
		for line := range strings.Lines(rec.Body.String()) {
			if n, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
				v, err := strconv.Atoi(n)
				if err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				return v
			}
		}
		return 0
	}
	for _, tc := range []struct {
		name, path, secret, body string
		route, reason            string
	}{
		{"no secret", "/v1/ingress/lora?event=txack", "", `{}`, "lora", herald.RefusedUnauthorized},
		{"wrong secret", "/v1/ingress/lora?event=txack", "nope", `{}`, "lora", herald.RefusedUnauthorized},
		{"no event type", "/v1/ingress/lora", ingressSecret, `{}`, "lora", herald.RefusedInvalid},
		{"garbage body", "/v1/ingress/lora?event=txack", ingressSecret, `{garbage`, "lora", herald.RefusedInvalid},
		{"10 MiB body", "/v1/ingress/lora?event=txack", ingressSecret, strings.Repeat("x", 10<<20), "lora", herald.RefusedTooLarge},
		{"route without events", "/v1/ingress/hooks?event=txack", ingressSecret, `{}`, "hooks", herald.RefusedUnknownRoute},
		{"unknown route", "/v1/ingress/nowhere?event=txack", ingressSecret, `{}`, "", herald.RefusedUnknownRoute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := refused(tc.route, tc.reason)
			f.do("POST", tc.path, tc.secret, tc.body)
			if after := refused(tc.route, tc.reason); after != before+1 {
				t.Errorf("herald_inbound_total{route=%q,reason=%q,result=\"refused\"} went from %d to %d, want +1", tc.route, tc.reason, before, after)
			}
		})
	}
	wantStatus(t, f.do("POST", "/v1/ingress/lora?event=txack", ingressSecret, `{"item":"q-1"}`), http.StatusNoContent)
	if n := refused("lora", herald.RefusedUnauthorized) + refused("lora", herald.RefusedInvalid); n != 4 {
		t.Errorf("after an accepted event: %d refusals of lora, want still 4", n)
	}
	var warns []string
	for line := range strings.Lines(f.logs.String()) {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "carrier events refused") {
			warns = append(warns, line)
		}
	}
	if len(warns) != 3 || !strings.Contains(warns[0], "route=lora refused=1 reason=unauthorized") ||
		!strings.Contains(warns[1], "route=hooks") || !strings.Contains(warns[2], "route=nowhere") {
		t.Errorf("WARN lines: %q, want one for each of lora, hooks and the unknown routes", warns)
	}
}
