package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/openapitest"
	"github.com/heraldmq/herald/metrics"
)

// tenantWorld is what one tenant made: every string it chose holds its
// marker; its ids are the server's.
type tenantWorld struct {
	key, marker string
	// messages, subscriptions and events are the ids of its own.
	messages, subscriptions, events []string
	room                            string
}

// secrets are the strings that must not appear in another tenant's answers.
func (w *tenantWorld) secrets() []string {
	s := append([]string{w.marker}, w.messages...)
	s = append(s, w.subscriptions...)
	return append(s, w.events...)
}

// populate makes w's tenant send, fail and hold messages, with
// its own targets, lanes and correlation ids, and a room with a pull and a
// push subscription, an event, a delivery pulled and acknowledged.
func (f *fixture) populate(w *tenantWorld) {
	f.t.Helper()
	t := f.t
	send := func(body string) string {
		t.Helper()
		rec := f.do("POST", "/v1/messages", w.key, body)
		wantStatus(t, rec, http.StatusAccepted)
		id := decode[herald.MessageView](t, rec).ID
		w.messages = append(w.messages, id)
		return id
	}
	m := w.marker
	send(`{"route":"hooks","text":"` + m + ` hello","correlation_id":"` + m + `-corr","target":"` + m + `-target"}`)
	send(`{"route":"hooks","target":"fail","text":"` + m + ` doomed","correlation_id":"` + m + `-dead"}`)
	send(`{"route":"devices","target":"` + m + `-device","payload":"AQID","lane":"` + m + `-gateway"}`)
	send(`{"route":"gw","lane":"` + m + `-lane","target":"` + m + `-chat","text":"` + m + ` one"}`)
	send(`{"route":"gw","lane":"` + m + `-lane","text":"` + m + ` two"}`)
	send(`{"route":"gw","lane":"` + m + `-paused","target":"busy","text":"` + m + ` slow"}`)
	send(`{"route":"gw","lane":"shared","text":"` + m + ` shared"}`)
	send(`{"route":"hooks","text":"` + m + ` later","coalesce_key":"` + m + `-coal"}`)

	w.room = m + "-room"
	wantStatus(t, f.do("POST", "/v1/rooms", w.key, `{"name":"`+w.room+`"}`), http.StatusCreated)
	pull := decode[subscriptionView](t, f.do("POST", "/v1/rooms/"+w.room+"/subscriptions", w.key,
		`{"type":"pull","event_types":[{"type":"`+m+`.created"}]}`)).ID
	push := decode[subscriptionView](t, f.do("POST", "/v1/rooms/"+w.room+"/subscriptions", w.key,
		`{"type":"push","url":"https://`+m+`-hook.example/in"}`)).ID
	w.subscriptions = append(w.subscriptions, pull, push)
	rec := f.do("POST", "/v1/rooms/"+w.room+"/events", w.key, `{"type":"`+m+`.created","data":{"who":"`+m+`"},"correlation_id":"`+m+`-event"}`)
	wantStatus(t, rec, http.StatusAccepted)
	ev := decode[herald.RoomEventView](t, rec)
	w.events = append(w.events, ev.ID)
	for _, d := range ev.Deliveries {
		w.messages = append(w.messages, d.MessageID)
	}
	leased := decode[map[string][]herald.DeliveryView](t, f.do("POST", "/v1/subscriptions/"+pull+"/pull", w.key, `{"max":5}`))["deliveries"]
	if len(leased) != 1 {
		t.Fatalf("%s pulled %d deliveries, want 1", m, len(leased))
	}
	wantStatus(t, f.do("POST", "/v1/subscriptions/"+pull+"/ack", w.key, `{"lease_ids":["`+leased[0].LeaseID+`"]}`), http.StatusOK)
}

// getURLs returns the URLs of op, a GET, filled in with w's ids and names:
// its path parameters (each of w's messages, subscriptions or events for
// an id), and each of its query parameters alone.
func getURLs(op *openapitest.Operation, w *tenantWorld) []string {
	ids := w.messages
	switch {
	case strings.HasPrefix(op.Path, "/v1/subscriptions/"):
		ids = w.subscriptions
	case strings.HasPrefix(op.Path, "/v1/rooms/{room}/events/"):
		ids = w.events
	}
	if !strings.Contains(op.Path, "{id}") {
		ids = ids[:1]
	}
	var urls []string
	for _, id := range ids {
		urls = append(urls, getURLsOf(op, w, id)...)
	}
	return urls
}

// getURLsOf is getURLs for one id.
func getURLsOf(op *openapitest.Operation, w *tenantWorld, id string) []string {
	path := op.Path
	fill := func(name, v string) { path = strings.ReplaceAll(path, "{"+name+"}", url.PathEscape(v)) }
	fill("id", id)
	fill("name", w.room)
	fill("room", w.room)
	m := w.marker
	values := map[string][]string{
		"route":          {"gw", "hooks", herald.RoomRoutePrefix + w.room},
		"correlation_id": {m + "-corr", m + "-event"},
		"target":         {m + "-target", m + "-device"},
		"status":         {"QUEUED", "DELIVERY_FAILED", "DELIVERED_TO_NS"},
		"reason":         {"refused", m},
		"limit":          {"1000"},
	}
	urls := []string{path}
	for _, name := range op.QueryParams() {
		for _, v := range values[name] {
			urls = append(urls, path+"?"+url.Values{name: {v}}.Encode())
		}
	}
	return urls
}

// TestTenantsSeeNothingOfEachOther: two tenants, each with messages
// (delivered, dead, held on a lane, sharing a lane), a room
// with subscriptions and an event, call every GET endpoint of the
// OpenAPI document, with their own ids and names and with the other's:
// no answer to one holds any string the other chose nor any of its ids;
// /metrics holds none of either's; and their figures (stats, activity)
// are each their own, adding up to what an admin key sees.
func TestTenantsSeeNothingOfEachOther(t *testing.T) {
	m := metrics.New()
	f := newObservedFixture(t, m, withAdmin, func(c *Config) { c.Metrics = m.Handler() })
	m.WatchCounts(f.store.Counts)
	m.WatchLanes(f.store.Lanes, 0)
	f.run()
	a := &tenantWorld{key: keyA, marker: "quuxacme"}
	b := &tenantWorld{key: keyB, marker: "quuxglobex"}
	f.populate(b) // b first: its message holds the shared lane, and a's waits behind it
	f.populate(a)
	f.clock.Advance(1500 * time.Millisecond)
	f.run()

	var gets []*openapitest.Operation
	for _, op := range specDoc(t).Operations() {
		if op.Method == "GET" && op.Handler == "httpapi" {
			gets = append(gets, op)
		}
	}
	if len(gets) < 10 {
		t.Fatalf("%d GET operations in the document: %v", len(gets), gets)
	}
	calls := 0
	for _, pair := range [][2]*tenantWorld{{a, b}, {b, a}} {
		me, other := pair[0], pair[1]
		for _, op := range gets {
			for _, world := range []*tenantWorld{me, other} {
				for _, u := range getURLs(op, world) {
					rec := f.do("GET", u, me.key, "")
					calls++
					body := rec.Body.String()
					asked, _ := url.QueryUnescape(u)
					for _, s := range other.secrets() {
						if strings.Contains(body, s) && !strings.Contains(asked, s) { // an echo of the request is no leak
							t.Errorf("GET %s as %s (%d) shows %s's %q:\n%s", u, me.marker, rec.Code, other.marker, s, body)
						}
					}
				}
			}
		}
	}
	t.Logf("%d GET operations, %d calls", len(gets), calls)

	// Own figures: each tenant's, adding up to the admin's.
	type figures struct {
		Enqueued, Succeeded, DeadLettered int
		Sent, Failed                      int64
	}
	read := func(key string) figures {
		s := decode[map[string]any](t, f.do("GET", "/v1/stats", key, ""))
		var fig figures
		fig.Enqueued, fig.Succeeded, fig.DeadLettered = int(s["enqueued"].(float64)), int(s["succeeded"].(float64)), int(s["dead_lettered"].(float64))
		for _, min := range decode[activityBody](t, f.do("GET", "/v1/activity", key, "")).Minutes {
			fig.Sent, fig.Failed = fig.Sent+min.Sent, fig.Failed+min.Failed
		}
		return fig
	}
	fa, fb, all := read(keyA), read(keyB), read(keyAdmin)
	if fa.Enqueued == 0 || fa.Sent == 0 || fa.DeadLettered == 0 {
		t.Fatalf("a's figures %+v: nothing counted", fa)
	}
	if sum := (figures{fa.Enqueued + fb.Enqueued, fa.Succeeded + fb.Succeeded, fa.DeadLettered + fb.DeadLettered,
		fa.Sent + fb.Sent, fa.Failed + fb.Failed}); sum != all {
		t.Errorf("a's figures %+v and b's %+v do not add up to the admin's %+v", fa, fb, all)
	}

	rec := f.do("GET", "/metrics", "", "")
	wantStatus(t, rec, http.StatusOK)
	for _, w := range []*tenantWorld{a, b} {
		for _, s := range append(w.secrets(), "shared") {
			if strings.Contains(rec.Body.String(), s) {
				t.Errorf("/metrics shows %s's %q", w.marker, s)
			}
		}
	}
	if !strings.Contains(rec.Body.String(), `herald_lane_waiting{lane="h-`) || !strings.Contains(rec.Body.String(), `route="room:"`) {
		t.Errorf("/metrics lacks the lanes' pseudonyms or the rooms' route:\n%s", grep(rec.Body.String(), "herald_lane_waiting", "room:"))
	}
}

// grep returns the lines of text that hold any of words.
func grep(text string, words ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	return fmt.Sprint(strings.Join(out, "\n"))
}
