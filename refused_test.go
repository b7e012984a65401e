package herald_test

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/metrics"
)

// scrape returns the lines of m's /metrics that start with prefix.
func scrape(m *metrics.Metrics, prefix string) []string {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var lines []string
	for line := range strings.Lines(rec.Body.String()) {
		if strings.HasPrefix(line, prefix) {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	return lines
}

// TestRefusedEventsAreCountedAndLoggedOnceAMinute: every refused carrier
// event counts in herald_inbound_total{result="refused"} by reason; the
// log gets one WARN per route a minute at most, the next one with the
// count refused since the last; a route that is not configured is
// counted under "" (a scanner's names make no series), and logged under
// it too.
func TestRefusedEventsAreCountedAndLoggedOnceAMinute(t *testing.T) {
	var logs strings.Builder
	m := metrics.New()
	p, err := herald.ProfilePolicy(herald.ProfileChannel)
	if err != nil {
		t.Fatal(err)
	}
	r := newRigWith(t, func(c *herald.Config) {
		c.Observer = m
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}, []herald.Route{{Name: "hooks", Carrier: &byTarget{}, Policy: p}})
	warns := func() []string {
		var out []string
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, "carrier events refused") {
				out = append(out, line)
			}
		}
		return out
	}

	for range 5 {
		r.eng.RefuseEvent("hooks", herald.RefusedUnauthorized, "no Authorization header")
	}
	if w := warns(); len(w) != 1 || !strings.Contains(w[0], "level=WARN") || !strings.Contains(w[0], "route=hooks refused=1 reason=unauthorized") {
		t.Fatalf("after 5 refusals: %q, want one WARN at the first", w)
	}
	r.clock.Advance(30 * time.Second)
	r.eng.RefuseEvent("hooks", herald.RefusedInvalid, "event: unknown type")
	if w := warns(); len(w) != 1 {
		t.Fatalf("a refusal 30 s later logged again: %q", w)
	}
	r.clock.Advance(31 * time.Second)
	r.eng.RefuseEvent("hooks", herald.RefusedInvalid, "event: unknown type")
	if w := warns(); len(w) != 2 || !strings.Contains(w[1], "route=hooks refused=6 reason=invalid") {
		t.Fatalf("a minute after the first line: %q, want a second line counting the 6 since", w)
	}

	r.eng.RefuseEvent("nowhere", herald.RefusedUnknownRoute, "the route takes no carrier events")
	r.eng.RefuseEvent("elsewhere", herald.RefusedUnknownRoute, "the route takes no carrier events")
	if w := warns(); len(w) != 3 || !strings.Contains(w[2], "route=nowhere refused=1 reason=unknown_route") {
		t.Fatalf("unknown routes: %q, want one line, for the first", w)
	}

	got := scrape(m, `herald_inbound_total{`)
	for _, want := range []string{
		`herald_inbound_total{kind="",reason="unauthorized",result="refused",route="hooks"} 5`,
		`herald_inbound_total{kind="",reason="invalid",result="refused",route="hooks"} 2`,
		`herald_inbound_total{kind="",reason="unknown_route",result="refused",route=""} 2`,
	} {
		found := false
		for _, line := range got {
			found = found || line == want
		}
		if !found {
			t.Errorf("no %s in %q", want, got)
		}
	}
	if len(got) != 3 {
		t.Errorf("series: %q, want 3 (no route a sender named)", got)
	}
}
