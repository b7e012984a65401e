package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// deadEvent makes a dead outcome event about a new message of tenant A
// (not due for an hour: no dispatcher takes it), for subscriber sub, and
// returns its id.
func (f *fixture) deadEvent(sub string) string {
	f.t.Helper()
	ctx := context.Background()
	now := f.clock.Now()
	m := &herald.Message{ID: "dead-" + now.Format("150405.000"), Tenant: tenantA, Route: "hooks", Lane: "hooks", Text: "hi",
		MaxAttempts: 1, CreatedAt: now, UpdatedAt: now, DueAt: now.Add(time.Hour)}
	v, _, err := f.store.Create(ctx, m, herald.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.store.Transition(ctx, herald.Transition{ID: v.ID, From: herald.StatusQueued, To: herald.StatusCancelled,
		At: f.clock.Now(), Notify: []string{sub}}); err != nil {
		f.t.Fatal(err)
	}
	evs, err := f.store.ClaimEvents(ctx, f.clock.Now(), 10, f.clock.Now().Add(time.Minute))
	if err != nil || len(evs) != 1 {
		f.t.Fatalf("ClaimEvents: %v, %v", evs, err)
	}
	if err := f.store.SettleEvent(ctx, herald.EventResult{ID: evs[0].ID, Dead: true, Attempt: 6, Error: "HTTP 500"}); err != nil {
		f.t.Fatal(err)
	}
	f.clock.Advance(time.Second)
	return evs[0].ID
}

func TestOutcomeEvents(t *testing.T) {
	f := newFixture(t)
	first, second := f.deadEvent("legacy"), f.deadEvent("legacy")

	rec := f.do("GET", "/v1/outcome-events?status=dead&limit=1", keyA, "")
	wantStatus(t, rec, http.StatusOK)
	page := decode[deadEventsBody](t, rec)
	if len(page.Events) != 1 || page.Events[0].ID != second || page.Events[0].Attempts != 6 || page.Events[0].LastError != "HTTP 500" ||
		page.Events[0].Subscriber != "legacy" || page.NextCursor == "" {
		t.Fatalf("first page: %+v, want the newest with a next cursor", page)
	}
	page = decode[deadEventsBody](t, f.do("GET", "/v1/outcome-events?limit=1&cursor="+page.NextCursor, keyA, ""))
	if len(page.Events) != 1 || page.Events[0].ID != first || page.NextCursor != "" {
		t.Fatalf("second page: %+v, want the oldest and no next cursor", page)
	}
	if page := decode[deadEventsBody](t, f.do("GET", "/v1/outcome-events", keyB, "")); len(page.Events) != 0 || page.Events == nil {
		t.Errorf("tenant B's: %+v, want an empty list", page)
	}
	for query, field := range map[string]string{
		"status=live": "status", "limit=0": "limit", "cursor=nope": "cursor", "since=yesterday": "since",
		"subscriber=nobody": "subscriber", "since=2030-01-02T00:00:00Z&until=2030-01-01T00:00:00Z": "until",
	} {
		e := wantError(t, f.do("GET", "/v1/outcome-events?"+query, keyA, ""), http.StatusBadRequest, codeInvalidField)
		if !strings.HasPrefix(e.Message, field+":") {
			t.Errorf("%s: %q, want it to name %s", query, e.Message, field)
		}
	}

	for body, field := range map[string]string{
		`{"ids":["` + first + `"],"since":"2030-01-01T00:00:00Z"}`: "ids",
		`{"ids":[]}`:       "ids",
		`{"since":"soon"}`: "since",
	} {
		e := wantError(t, f.do("POST", "/v1/outcome-events/replay", keyA, body), http.StatusBadRequest, codeInvalidField)
		if !strings.HasPrefix(e.Message, field+":") {
			t.Errorf("%s: %q, want it to name %s", body, e.Message, field)
		}
	}
	wantError(t, f.do("POST", "/v1/outcome-events/replay", keyA, `{"identifiers":[1]}`), http.StatusBadRequest, codeUnknownField)
	if got := decode[map[string]int](t, f.do("POST", "/v1/outcome-events/replay", keyB, `{"ids":["`+first+`"]}`)); got["replayed"] != 0 {
		t.Errorf("tenant B replayed A's event: %v", got)
	}
	rec = f.do("POST", "/v1/outcome-events/replay", keyA, `{"ids":["`+first+`"]}`)
	wantStatus(t, rec, http.StatusOK)
	if got := decode[map[string]int](t, rec); got["replayed"] != 1 {
		t.Errorf("replay by id: %v, want 1", got)
	}
	if got := decode[map[string]int](t, f.do("POST", "/v1/outcome-events/replay", keyA, "")); got["replayed"] != 1 {
		t.Errorf("replay of all: %v, want 1 (the other)", got)
	}
	if page := decode[deadEventsBody](t, f.do("GET", "/v1/outcome-events", keyA, "")); len(page.Events) != 0 {
		t.Errorf("dead after the replays: %+v, want none", page)
	}
}
