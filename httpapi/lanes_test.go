package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestLanes: GET /v1/lanes lists the busiest lanes of the gated routes
// that hold the caller's messages, counting only those and showing none of
// their ids, a paused lane with its pause; an admin key sees every lane
// and every tenant's messages; route and limit narrow it, and a bad limit
// or an unknown route is refused.
func TestLanes(t *testing.T) {
	f := newFixture(t, withAdmin)
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

	type want struct {
		lane             string
		queued, inFlight float64
		paused           bool
	}
	check := func(key string, wants []want) *httptest.ResponseRecorder {
		t.Helper()
		rec := f.do("GET", "/v1/lanes", key, "")
		wantStatus(t, rec, http.StatusOK)
		got := decode[map[string][]map[string]any](t, rec)["lanes"]
		if len(got) != len(wants) {
			t.Fatalf("lanes of %s = %v, want %d", key, got, len(wants))
		}
		for i, w := range wants {
			l := got[i]
			if l["route"] != "gw" || l["lane"] != w.lane || l["queued"] != w.queued || l["in_flight"] != w.inFlight {
				t.Errorf("lanes of %s [%d] = %v, want %s with %v queued and %v in flight (a number)", key, i, l, w.lane, w.queued, w.inFlight)
			}
			if paused := l["paused_until"] != nil; paused != w.paused || (l["pause_reason"] == "backpressure") != w.paused {
				t.Errorf("lanes of %s [%d] = %v, paused %v", key, i, l, w.paused)
			}
			if _, ok := l["operator_pause"]; !ok || len(l) != 8 {
				t.Errorf("lanes of %s [%d] = %v, want route, lane, queued, in_flight, paused_until, pause_reason, next_at, operator_pause", key, i, l)
			}
		}
		return rec
	}
	all := check(keyAdmin, []want{{"gateway-2", 2, 1, false}, {"gateway-1", 1, 0, true}, {"gateway-3", 0, 1, false}})
	checkGolden(t, "lanes", render(all))
	check(keyA, []want{{"gateway-1", 1, 0, true}, {"gateway-2", 0, 1, false}})
	check(keyB, []want{{"gateway-2", 2, 0, false}, {"gateway-3", 0, 1, false}})

	top := decode[lanesBody](t, f.do("GET", "/v1/lanes?route=gw&limit=1", keyAdmin, "")).Lanes
	if len(top) != 1 || top[0].Lane != "gateway-2" {
		t.Errorf("top lane of gw = %+v, want gateway-2", top)
	}
	if rec := f.do("GET", "/v1/lanes?route=hooks", keyA, ""); rec.Code != http.StatusOK || rec.Body.String() != `{"lanes":[],"pauses":[]}`+"\n" {
		t.Errorf("lanes of an ungated route: %d %s, want an empty list", rec.Code, rec.Body)
	}
	wantError(t, f.do("GET", "/v1/lanes?route=nope", keyA, ""), http.StatusBadRequest, codeUnknownRoute)
	for _, limit := range []string{"0", "-1", "1001", "ten", "2.5"} {
		wantError(t, f.do("GET", "/v1/lanes?limit="+limit, keyA, ""), http.StatusBadRequest, codeInvalidField)
	}
	if n := len(decode[lanesBody](t, f.do("GET", "/v1/lanes?limit=1000", keyAdmin, "")).Lanes); n != 3 {
		t.Errorf("limit 1000 gives %d lanes, want all 3", n)
	}
	wantError(t, f.do("GET", "/v1/lanes", "", ""), http.StatusUnauthorized, "unauthorized")
	wantError(t, f.do("POST", "/v1/lanes", keyA, ""), http.StatusMethodNotAllowed, codeMethodNotAllowed)
}
