package httpapi

import (
	"net/http"
	"testing"

	"github.com/heraldmq/herald"
)

// TestLanePauseEndpoints: only an admin key may pause or resume (a
// tenant's write key is 403 and changes nothing); a pause is kept and
// listed in GET /v1/lanes and GET /v1/routes for every tenant; bad input is 400 naming the field and
// changes nothing; a resume says whether there was a pause.
func TestLanePauseEndpoints(t *testing.T) {
	f := newFixture(t, withAdmin)
	for _, path := range []string{"/v1/lanes/pause", "/v1/lanes/resume"} {
		wantError(t, f.do("POST", path, keyA, `{"route":"hooks"}`), http.StatusForbidden, codeForbidden)
	}
	for _, c := range []struct{ body, code string }{
		{`{"lane":"x"}`, codeMissingField},
		{`{"route":"nope"}`, codeUnknownRoute},
		{`{"route":"hooks","until":"2000-01-01T00:00:00Z"}`, codeInvalidField},
		{`{"route":"hooks","until":"tomorrow"}`, codeInvalidField},
		{`{"route":"hooks","for":"1h"}`, codeUnknownField},
		{``, codeInvalidJSON},
	} {
		wantError(t, f.do("POST", "/v1/lanes/pause", keyAdmin, c.body), http.StatusBadRequest, c.code)
	}
	if p := decode[lanesBody](t, f.do("GET", "/v1/lanes", keyA, "")).Pauses; len(p) != 0 {
		t.Fatalf("pauses after refusals: %+v", p)
	}
	got := decode[map[string]herald.PauseView](t, f.do("POST", "/v1/lanes/pause", keyAdmin, `{"route":"hooks","reason":"maintenance"}`))["pause"]
	if got.Route != "hooks" || got.Lane != "" || got.Until != nil || got.Reason != "maintenance" {
		t.Errorf("pause = %+v", got)
	}
	wantStatus(t, f.do("POST", "/v1/lanes/pause", keyAdmin, `{"route":"gw","lane":"gateway-1","until":"2040-01-01T00:00:00Z"}`), http.StatusOK)
	if p := decode[lanesBody](t, f.do("GET", "/v1/lanes", keyB, "")).Pauses; len(p) != 2 || p[0].Route != "gw" || p[1].Route != "hooks" {
		t.Errorf("another tenant's GET /v1/lanes pauses = %+v, want both (a pause is everyone's)", p)
	}
	if p := decode[lanesBody](t, f.do("GET", "/v1/lanes?route=gw", keyA, "")).Pauses; len(p) != 1 {
		t.Errorf("pauses of route gw = %+v, want gw's only", p)
	}
	for _, rc := range decode[herald.RoutesView](t, f.do("GET", "/v1/routes", keyB, "")).Routes {
		if (rc.Route == "hooks") != (rc.Paused != nil) {
			t.Errorf("route %s paused = %+v", rc.Route, rc.Paused)
		}
	}
	if ok := decode[map[string]bool](t, f.do("POST", "/v1/lanes/resume", keyAdmin, `{"route":"hooks"}`))["resumed"]; !ok {
		t.Error("resume of a paused route: resumed false")
	}
	if ok := decode[map[string]bool](t, f.do("POST", "/v1/lanes/resume", keyAdmin, `{"route":"hooks"}`))["resumed"]; ok {
		t.Error("resume of a route no longer paused: resumed true")
	}
	wantError(t, f.do("POST", "/v1/lanes/resume", keyAdmin, `{"route":"hooks","reason":"x"}`), http.StatusBadRequest, codeUnknownField)
	wantError(t, f.do("POST", "/v1/lanes/resume", keyAdmin, `{"route":"nope"}`), http.StatusBadRequest, codeUnknownRoute)
}

// TestRoutesAndFailOrphans: GET /v1/routes lists every configured route
// with the tenant's counts; failing the orphans of a configured route is
// 409, without a route 400.
func TestRoutesAndFailOrphans(t *testing.T) {
	f := newFixture(t)
	f.sendOK(`{"route":"hooks","target":"t","text":"a"}`)
	v := decode[herald.RoutesView](t, f.do("GET", "/v1/routes", keyA, ""))
	found := false
	for _, rc := range v.Routes {
		if rc.Route == "hooks" {
			found = rc.Counts[herald.StatusQueued] == 1
		}
	}
	if !found || len(v.Orphaned) != 0 {
		t.Errorf("routes of key-a = %+v, want hooks with 1 QUEUED and no orphans", v)
	}
	for _, rc := range decode[herald.RoutesView](t, f.do("GET", "/v1/routes", keyB, "")).Routes {
		if rc.Route == "hooks" && rc.Counts[herald.StatusQueued] != 0 {
			t.Errorf("key-b sees tenant a's messages: %+v", rc)
		}
	}
	wantError(t, f.do("POST", "/v1/dead-letters/fail-orphans", keyA, `{"route":"hooks"}`), http.StatusConflict, codeRouteConfigured)
	wantError(t, f.do("POST", "/v1/dead-letters/fail-orphans", keyA, `{}`), http.StatusBadRequest, codeMissingField)
	if n := decode[map[string]int](t, f.do("POST", "/v1/dead-letters/fail-orphans", keyA, `{"route":"gone"}`))["failed"]; n != 0 {
		t.Errorf("failed %d orphans of a route with none", n)
	}
}
