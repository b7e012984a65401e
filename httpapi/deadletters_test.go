package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// deadLetters sends n messages to target "fail" on route and runs the
// engine until they are dead letters.
func (f *fixture) deadLetters(route string, n int) {
	f.t.Helper()
	for range n {
		f.sendOK(`{"route":"` + route + `","target":"fail","text":"hi"}`)
	}
	f.run()
}

func TestDeadLettersListReplayPurge(t *testing.T) {
	f := newFixture(t)
	f.deadLetters("hooks", 2)
	f.deadLetters("devices", 1)
	ok := f.sendOK(`{"route":"hooks","target":"ok","text":"hi"}`)
	f.run()
	if v := decode[herald.MessageView](t, f.do("GET", "/v1/messages/"+ok.ID, keyA, "")); v.Status != herald.StatusDeliverySuccessful {
		t.Fatalf("the good message is %s", v.Status)
	}

	l := f.list("/v1/dead-letters", keyA)
	if len(l.Messages) != 3 {
		t.Fatalf("%d dead letters, want 3", len(l.Messages))
	}
	for _, m := range l.Messages {
		if m.Status != herald.StatusDeliveryFailed || !strings.Contains(m.LastError, "refused") {
			t.Errorf("dead letter %+v", m)
		}
	}
	if l := f.list("/v1/dead-letters?route=hooks&limit=1", keyA); len(l.Messages) != 1 || l.NextCursor == "" {
		t.Errorf("route filter page: %d messages, cursor %q", len(l.Messages), l.NextCursor)
	}
	if l := f.list("/v1/dead-letters", keyB); len(l.Messages) != 0 {
		t.Errorf("tenant B sees %d dead letters", len(l.Messages))
	}
	wantError(t, f.do("GET", "/v1/dead-letters?limit=5000", keyA, ""), http.StatusBadRequest, codeInvalidField)

	// Replay: tenant B replays nothing of A's; A replays the route's two,
	// which stay queued while the loops are stopped.
	f.stop()
	if got := decode[map[string]int](t, f.do("POST", "/v1/dead-letters/replay", keyB, "")); got["replayed"] != 0 {
		t.Errorf("tenant B replayed %v", got)
	}
	rec := f.do("POST", "/v1/dead-letters/replay", keyA, `{"route":"hooks","reason":"refused","rate_per_s":100}`)
	wantStatus(t, rec, http.StatusOK)
	if got := decode[map[string]int](t, rec); got["replayed"] != 2 {
		t.Errorf("replay answer %v, want 2", got)
	}
	if l := f.list("/v1/dead-letters", keyA); len(l.Messages) != 1 {
		t.Errorf("%d dead letters after the replay, want 1", len(l.Messages))
	}
	if l := f.list("/v1/messages?status=QUEUED", keyA); len(l.Messages) != 2 {
		t.Errorf("%d replayed messages queued, want 2", len(l.Messages))
	}
	for _, body := range []string{`{"target":7}`, `{"since":"yesterday"}`, `{"until":"2025-13-01T00:00:00Z"}`, `{"since":""}`, `{"until":null}`, `{"rate_per_s":"fast"}`, `{"rate_per_s":-1}`, `{`} {
		rec := f.do("POST", "/v1/dead-letters/replay", keyA, body)
		wantStatus(t, rec, http.StatusBadRequest)
	}

	// Purge: a bad time is refused; a time before them all purges nothing.
	f.clock.Advance(time.Minute)
	f.run() // the loops again: the replayed two fail again
	wantError(t, f.do("DELETE", "/v1/dead-letters?before=soon", keyA, ""), http.StatusBadRequest, codeInvalidField)
	before := url.QueryEscape(start.Add(-time.Hour).Format(time.RFC3339))
	if got := decode[map[string]int](t, f.do("DELETE", "/v1/dead-letters?before="+before, keyA, "")); got["purged"] != 0 {
		t.Errorf("purge before all: %v", got)
	}
	if got := decode[map[string]int](t, f.do("DELETE", "/v1/dead-letters?route=devices", keyA, "")); got["purged"] != 1 {
		t.Errorf("purge of devices: %v", got)
	}
	if got := decode[map[string]int](t, f.do("DELETE", "/v1/dead-letters", keyB, "")); got["purged"] != 0 {
		t.Errorf("tenant B purged %v", got)
	}
	if got := decode[map[string]int](t, f.do("DELETE", "/v1/dead-letters", keyA, "")); got["purged"] != 2 {
		t.Errorf("purge of the rest: %v", got)
	}
	if l := f.list("/v1/dead-letters", keyA); len(l.Messages) != 0 {
		t.Errorf("%d dead letters after the purge", len(l.Messages))
	}
	// The delivered message is not a dead letter and stays.
	wantStatus(t, f.do("GET", "/v1/messages/"+ok.ID, keyA, ""), http.StatusOK)
}

// TestDeadLettersReplayByTarget: a replay with a target replays the dead
// letters of that target only (a room's subscription's), with the route
// and the other filters.
func TestDeadLettersReplayByTarget(t *testing.T) {
	f := newFixture(t)
	f.deadLetters("hooks", 2)
	f.deadLetters("devices", 1)
	f.stop()
	for _, c := range []struct {
		body string
		want int
	}{
		{`{"target":"another"}`, 0},
		{`{"route":"devices","target":"another"}`, 0},
		{`{"route":"hooks","target":"fail","reason":"no such reason"}`, 0},
		{`{"route":"hooks","target":"fail"}`, 2},
		{`{"target":"fail"}`, 1}, // the other route's: the two are queued already
	} {
		rec := f.do("POST", "/v1/dead-letters/replay", keyA, c.body)
		wantStatus(t, rec, http.StatusOK)
		if got := decode[map[string]int](t, rec)["replayed"]; got != c.want {
			t.Errorf("replay %s: %d replayed, want %d", c.body, got, c.want)
		}
	}
	if l := f.list("/v1/messages?status=QUEUED&target=fail", keyA); len(l.Messages) != 3 {
		t.Errorf("%d replayed messages queued, want 3", len(l.Messages))
	}
}
