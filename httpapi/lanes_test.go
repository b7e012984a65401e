package httpapi

import (
	"net/http"
	"testing"
)

// TestLanes: GET /v1/lanes lists the busiest lanes of the gated routes,
// every tenant's messages counted and none of their ids shown, a paused
// lane with its pause; route and limit narrow it, and a bad limit or an
// unknown route is refused.
func TestLanes(t *testing.T) {
	f := newFixture(t)
	f.run() // the store learns the admission at Start
	for _, m := range []struct{ key, body string }{
		{keyA, `{"route":"gw","lane":"gateway-1","target":"busy","text":"1"}`},
		{keyA, `{"route":"gw","lane":"gateway-1","text":"2"}`},
		{keyA, `{"route":"gw","lane":"gateway-2","text":"3"}`},
		{keyB, `{"route":"gw","lane":"gateway-2","text":"4"}`},
		{keyB, `{"route":"gw","lane":"gateway-2","text":"5"}`},
		{keyB, `{"route":"gw","lane":"gateway-3","text":"6"}`},
		{keyA, `{"route":"hooks","lane":"ungated","text":"7"}`},
	} {
		wantStatus(t, f.do("POST", "/v1/messages", m.key, m.body), http.StatusAccepted)
	}
	f.run() // gateway-1 pauses (its first message is asked to wait); gateway-2 and -3 send one each

	rec := f.do("GET", "/v1/lanes", keyA, "")
	wantStatus(t, rec, http.StatusOK)
	checkGolden(t, "lanes", render(rec))
	got := decode[map[string][]map[string]any](t, rec)["lanes"]
	if len(got) != 3 {
		t.Fatalf("lanes = %v, want 3", got)
	}
	for i, w := range []struct {
		lane             string
		queued, inFlight float64
		paused           bool
	}{{"gateway-2", 2, 1, false}, {"gateway-1", 1, 0, true}, {"gateway-3", 0, 1, false}} {
		l := got[i]
		if l["route"] != "gw" || l["lane"] != w.lane || l["queued"] != w.queued || l["in_flight"] != w.inFlight {
			t.Errorf("lanes[%d] = %v, want %s with %v queued and %v in flight (a number)", i, l, w.lane, w.queued, w.inFlight)
		}
		if paused := l["paused_until"] != nil; paused != w.paused || (l["pause_reason"] == "backpressure") != w.paused {
			t.Errorf("lanes[%d] = %v, paused %v", i, l, w.paused)
		}
		if _, ok := l["next_at"]; !ok || len(l) != 7 {
			t.Errorf("lanes[%d] = %v, want route, lane, queued, in_flight, paused_until, pause_reason, next_at", i, l)
		}
	}
	if b := f.do("GET", "/v1/lanes", keyB, ""); b.Body.String() != rec.Body.String() {
		t.Errorf("tenant B sees other lanes:\n%s\nthan A:\n%s", b.Body, rec.Body)
	}

	top := decode[lanesBody](t, f.do("GET", "/v1/lanes?route=gw&limit=1", keyA, "")).Lanes
	if len(top) != 1 || top[0].Lane != "gateway-2" {
		t.Errorf("top lane of gw = %+v, want gateway-2", top)
	}
	if rec := f.do("GET", "/v1/lanes?route=hooks", keyA, ""); rec.Code != http.StatusOK || rec.Body.String() != `{"lanes":[]}`+"\n" {
		t.Errorf("lanes of an ungated route: %d %s, want an empty list", rec.Code, rec.Body)
	}
	wantError(t, f.do("GET", "/v1/lanes?route=nope", keyA, ""), http.StatusBadRequest, codeUnknownRoute)
	for _, limit := range []string{"0", "-1", "1001", "ten", "2.5"} {
		wantError(t, f.do("GET", "/v1/lanes?limit="+limit, keyA, ""), http.StatusBadRequest, codeInvalidField)
	}
	if n := len(decode[lanesBody](t, f.do("GET", "/v1/lanes?limit=1000", keyA, "")).Lanes); n != 3 {
		t.Errorf("limit 1000 gives %d lanes, want all 3", n)
	}
	wantError(t, f.do("GET", "/v1/lanes", "", ""), http.StatusUnauthorized, "unauthorized")
	wantError(t, f.do("POST", "/v1/lanes", keyA, ""), http.StatusMethodNotAllowed, codeMethodNotAllowed)
}
