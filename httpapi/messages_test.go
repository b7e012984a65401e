package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/heraldmq/herald"
)

func TestAnotherTenantsMessageIsNotFound(t *testing.T) {
	f := newFixture(t)
	v := f.sendOK(`{"route":"hooks","text":"hi"}`)
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/messages/" + v.ID},
		{"POST", "/v1/messages/" + v.ID + "/cancel"},
		{"POST", "/v1/messages/" + v.ID + "/replay"},
		{"GET", "/v1/messages/" + v.ID + "/explain"},
	} {
		wantError(t, f.do(r.method, r.path, keyB, ""), http.StatusNotFound, codeNotFound)
	}
	if l := f.list("/v1/messages", keyB); len(l.Messages) != 0 {
		t.Errorf("tenant B lists %d messages", len(l.Messages))
	}
	// Tenant B's attempts changed nothing.
	got := decode[herald.MessageView](t, f.do("GET", "/v1/messages/"+v.ID, keyA, ""))
	if got.Status != herald.StatusQueued {
		t.Errorf("status %s after tenant B's cancel", got.Status)
	}
}

func TestUnknownMessageIsNotFound(t *testing.T) {
	f := newFixture(t)
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/messages/0190c0de-0000-7000-8000-000000000000"},
		{"POST", "/v1/messages/nope/cancel"},
		{"POST", "/v1/messages/nope/replay"},
		{"GET", "/v1/messages/nope/explain"},
	} {
		wantError(t, f.do(r.method, r.path, keyA, ""), http.StatusNotFound, codeNotFound)
	}
}

func TestCancelThenReplay(t *testing.T) {
	f := newFixture(t)
	v := f.sendOK(`{"route":"hooks","text":"hi"}`)

	rec := f.do("POST", "/v1/messages/"+v.ID+"/cancel", keyA, "")
	wantStatus(t, rec, http.StatusOK)
	if c := decode[herald.MessageView](t, rec); c.Status != herald.StatusCancelled || len(c.Timeline) != 2 {
		t.Errorf("cancelled view = %+v", c)
	}
	wantError(t, f.do("POST", "/v1/messages/"+v.ID+"/cancel", keyA, ""), http.StatusConflict, codeNotCancellable)

	rec = f.do("POST", "/v1/messages/"+v.ID+"/replay", keyA, "")
	wantStatus(t, rec, http.StatusOK)
	r := decode[herald.MessageView](t, rec)
	if r.Status != herald.StatusQueued || r.Attempt != 0 || len(r.Timeline) != 3 {
		t.Errorf("replayed view = %+v", r)
	}
	wantError(t, f.do("POST", "/v1/messages/"+v.ID+"/replay", keyA, ""), http.StatusConflict, codeNotReplayable)
}

func TestExplain(t *testing.T) {
	f := newFixture(t)
	v := f.sendOK(`{"route":"hooks","text":"hi"}`)
	rec := f.do("GET", "/v1/messages/"+v.ID+"/explain", keyA, "")
	wantStatus(t, rec, http.StatusOK)
	x := decode[map[string]any](t, rec)
	if x["id"] != v.ID || x["status"] != "QUEUED" || x["reason"] != "dispatching" {
		t.Errorf("explain = %v", x)
	}
	for _, k := range []string{"detail", "until", "blocking_ids"} {
		if _, ok := x[k]; !ok {
			t.Errorf("explain lacks %q", k)
		}
	}
}

func TestListPagingAndFilters(t *testing.T) {
	f := newFixture(t)
	var ids []string
	for i := range 5 {
		route := "hooks"
		if i%2 == 1 {
			route = "devices"
		}
		v := f.sendOK(fmt.Sprintf(`{"route":%q,"target":"t","text":"m%d","correlation_id":"c-%d"}`, route, i, i%2))
		ids = append(ids, v.ID)
	}
	// Newest first, two at a time.
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		l := f.list("/v1/messages?limit=2&cursor="+url.QueryEscape(cursor), keyA)
		if len(l.Messages) > 2 {
			t.Fatalf("page of %d", len(l.Messages))
		}
		for _, m := range l.Messages {
			got = append(got, m.ID)
		}
		if l.NextCursor == "" {
			break
		}
		cursor = l.NextCursor
	}
	want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("paged ids\n %v\nwant\n %v", got, want)
	}

	if l := f.list("/v1/messages", keyA); len(l.Messages) != 5 || l.NextCursor != "" {
		t.Errorf("default page: %d messages, cursor %q", len(l.Messages), l.NextCursor)
	}
	if l := f.list("/v1/messages?route=devices", keyA); len(l.Messages) != 2 {
		t.Errorf("route filter: %d messages", len(l.Messages))
	}
	if l := f.list("/v1/messages?correlation_id=c-0", keyA); len(l.Messages) != 3 {
		t.Errorf("correlation filter: %d messages", len(l.Messages))
	}
	if l := f.list("/v1/messages?status=QUEUED&route=hooks", keyA); len(l.Messages) != 3 {
		t.Errorf("status filter: %d messages", len(l.Messages))
	}
	if l := f.list("/v1/messages?status=CANCELLED", keyA); len(l.Messages) != 0 || l.Messages == nil {
		t.Errorf("empty list = %+v (want [], not null)", l.Messages)
	}
	for _, q := range []string{"status=queued", "status=DONE", "limit=0", "limit=1001", "limit=x", "limit=-1"} {
		wantError(t, f.do("GET", "/v1/messages?"+q, keyA, ""), http.StatusBadRequest, codeInvalidField)
	}
	if l := f.list("/v1/messages?limit=1000", keyA); len(l.Messages) != 5 {
		t.Errorf("limit=1000: %d messages", len(l.Messages))
	}
}

func TestListByTarget(t *testing.T) {
	f := newFixture(t)
	a1 := f.sendOK(`{"route":"devices","target":"meter-4711","text":"a"}`)
	f.sendOK(`{"route":"devices","target":"meter-47","text":"b"}`)
	a3 := f.sendOK(`{"route":"hooks","target":"meter-4711","text":"c"}`)
	rec := f.do("POST", "/v1/messages", keyB, `{"route":"devices","target":"meter-4711","text":"d"}`)
	wantStatus(t, rec, http.StatusAccepted)

	l := f.list("/v1/messages?target=meter-4711", keyA)
	if got := viewIDs(l.Messages); fmt.Sprint(got) != fmt.Sprint([]string{a3.ID, a1.ID}) {
		t.Errorf("target=meter-4711 lists %v, want %v (exact match, tenant A's only)", got, []string{a3.ID, a1.ID})
	}
	if l := f.list("/v1/messages?target=meter-4711&route=devices", keyA); fmt.Sprint(viewIDs(l.Messages)) != fmt.Sprint([]string{a1.ID}) {
		t.Errorf("target and route list %v, want [%s]", viewIDs(l.Messages), a1.ID)
	}
	if l := f.list("/v1/messages?target=meter", keyA); len(l.Messages) != 0 {
		t.Errorf("target=meter lists %v, want none: the match is exact", viewIDs(l.Messages))
	}
}

// TestListByIDPrefix: id_prefix lists the tenant's messages whose id
// starts with it, and only them; a prefix longer than any id is refused.
func TestListByIDPrefix(t *testing.T) {
	f := newFixture(t)
	a := f.sendOK(`{"route":"devices","target":"meter-1","text":"a"}`)
	b := f.sendOK(`{"route":"devices","target":"meter-2","text":"b"}`)
	if l := f.list("/v1/messages?id_prefix="+a.ID, keyA); fmt.Sprint(viewIDs(l.Messages)) != fmt.Sprint([]string{a.ID}) {
		t.Errorf("id_prefix=%s lists %v, want [%s]", a.ID, viewIDs(l.Messages), a.ID)
	}
	if l := f.list("/v1/messages?id_prefix="+a.ID[:8], keyA); fmt.Sprint(viewIDs(l.Messages)) != fmt.Sprint([]string{b.ID, a.ID}) {
		t.Errorf("id_prefix=%s lists %v, want [%s %s]", a.ID[:8], viewIDs(l.Messages), b.ID, a.ID)
	}
	if l := f.list("/v1/messages?id_prefix="+a.ID, keyB); len(l.Messages) != 0 {
		t.Errorf("another tenant's id_prefix lists %v, want none", viewIDs(l.Messages))
	}
	if l := f.list("/v1/messages?id_prefix="+b.ID+"0", keyA); len(l.Messages) != 0 {
		t.Errorf("id_prefix longer than the id lists %v, want none", viewIDs(l.Messages))
	}
	wantError(t, f.do("GET", "/v1/messages?id_prefix="+strings.Repeat("0", 65), keyA, ""), http.StatusBadRequest, codeInvalidField)
}

func viewIDs(views []herald.MessageView) []string {
	var ids []string
	for _, v := range views {
		ids = append(ids, v.ID)
	}
	return ids
}

func TestListBodyKeys(t *testing.T) {
	f := newFixture(t)
	rec := f.do("GET", "/v1/messages", keyA, "")
	wantStatus(t, rec, http.StatusOK)
	if got := rec.Body.String(); got != "{\"messages\":[],\"next_cursor\":\"\"}\n" {
		t.Errorf("empty list body = %q", got)
	}
}

// TestListTimelines: a list leaves every timeline out ([]) unless asked
// with ?timeline=true, which gives each message's as GET does.
func TestListTimelines(t *testing.T) {
	f := newFixture(t)
	f.run()
	m := f.sendOK(`{"route":"hooks","text":"a","target":"fail"}`)
	f.run()
	one := decode[herald.MessageView](t, f.do("GET", "/v1/messages/"+m.ID, keyA, ""))
	if len(one.Timeline) < 3 {
		t.Fatalf("timeline %+v, want creation, send, failure", one.Timeline)
	}
	for _, path := range []string{"/v1/messages", "/v1/dead-letters"} {
		if l := f.list(path, keyA); len(l.Messages) != 1 || len(l.Messages[0].Timeline) != 0 {
			t.Errorf("%s: %+v, want one message without its timeline", path, l.Messages)
		}
		l := f.list(path+"?timeline=true", keyA)
		if len(l.Messages) != 1 || len(l.Messages[0].Timeline) != len(one.Timeline) {
			t.Errorf("%s?timeline=true: %+v, want the message's %d entries", path, l.Messages, len(one.Timeline))
		}
	}
	wantError(t, f.do("GET", "/v1/messages?timeline=yes", keyA, ""), http.StatusBadRequest, codeInvalidField)
}
