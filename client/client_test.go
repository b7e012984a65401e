package client_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/client"
)

// patience bounds, in real time, every call of a test.
const patience = 10 * time.Second

// newServer starts a server for t (see startServer) and stops it when t ends.
func newServer(t *testing.T, wrap func(http.Handler) http.Handler) *server {
	t.Helper()
	s, err := startServer(wrap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close the server: %v", err)
		}
	})
	return s
}

// newClient returns a client of the server at url with key, after mutate.
func newClient(t *testing.T, url, key string, mutate ...func(*client.Config)) *client.Client {
	t.Helper()
	cfg := client.Config{URL: url, Key: key}
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testCtx is t's context, bounded by patience.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	t.Cleanup(cancel)
	return ctx
}

// send sends req and fails t unless a new message was created.
func send(t *testing.T, c *client.Client, req client.SendRequest) herald.MessageView {
	t.Helper()
	res, err := c.Send(testCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created {
		t.Fatalf("send %+v: not created", req)
	}
	return res.Message
}

// waitFor waits until id is in status.
func waitFor(t *testing.T, c *client.Client, id string, status herald.Status) herald.MessageView {
	t.Helper()
	m, err := c.WaitFor(testCtx(t), id, client.InStatus(status))
	if err != nil {
		t.Fatalf("waiting for %s to be %s: %v", id, status, err)
	}
	return m
}

// wantAPIError fails t unless err is an *client.Error with status and code.
func wantAPIError(t *testing.T, err error, status int, code string) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want a *client.Error %d %s", err, err, status, code)
	}
	if e.Status != status || e.Code != code || e.Message == "" {
		t.Fatalf("error %+v, want %d %s with a message", e, status, code)
	}
	if client.ErrorCode(err) != code {
		t.Fatalf("ErrorCode = %q, want %q", client.ErrorCode(err), code)
	}
	return e
}

func TestNewRefusesABadURL(t *testing.T) {
	for _, u := range []string{"", "host name:8080", "ftp://host", "http://", "http://host/?a=b", "http://host/#x"} {
		if _, err := client.New(client.Config{URL: u}); err == nil {
			t.Errorf("New(%q): no error", u)
		}
	}
	if _, err := client.New(client.Config{URL: "http://127.0.0.1:8080/prefix/"}); err != nil {
		t.Errorf("New with a path: %v", err)
	}
}

// TestURLWithoutScheme: an address without a scheme is taken as http.
func TestURLWithoutScheme(t *testing.T) {
	s := newServer(t, nil)
	c := newClient(t, strings.TrimPrefix(s.URL, "http://"), keyAcme)
	if _, err := c.List(testCtx(t), client.ListFilter{}); err != nil {
		t.Fatalf("List through %s without its scheme: %v", s.URL, err)
	}
	for _, u := range []string{"localhost:8080", "herald.internal"} {
		if _, err := client.New(client.Config{URL: u}); err != nil {
			t.Errorf("New(%q): %v", u, err)
		}
	}
}

func TestSendAndGet(t *testing.T) {
	s := newServer(t, nil)
	c := newClient(t, s.URL+"/", keyAcme) // the trailing slash is dropped
	ctx := testCtx(t)
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)

	req := client.SendRequest{
		Route: routeHooks, Target: "someone", Payload: []byte{0, 1, 2, 0xff},
		Params: map[string]string{"k": "v"}, Priority: 7, Lane: "lane-1",
		CorrelationID: "order-1", IdempotencyKey: "idem-1", CoalesceKey: "co-1", ExpiresAt: expires,
	}
	res, err := c.Send(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Message
	if !res.Created || res.Deduplicated {
		t.Errorf("created %v, deduplicated %v: want a new message", res.Created, res.Deduplicated)
	}
	if m.ID == "" || m.Route != routeHooks || m.Target != "someone" || m.Priority != 7 || m.Lane != "lane-1" ||
		m.CorrelationID != "order-1" || m.Params["k"] != "v" || m.Payload != base64.StdEncoding.EncodeToString(req.Payload) ||
		m.ExpiresAt == nil || !m.ExpiresAt.Equal(expires) {
		t.Errorf("the view does not mirror the request:\n%+v", m)
	}
	if m.Status != herald.StatusQueued {
		t.Errorf("status %s at creation, want QUEUED", m.Status)
	}

	// The same idempotency key: the first message, 200, nothing queued.
	again, err := c.Send(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if again.Created || again.Message.ID != m.ID {
		t.Errorf("idempotent repeat: created %v, id %s; want the first message %s, not created", again.Created, again.Message.ID, m.ID)
	}

	got := waitFor(t, c, m.ID, herald.StatusDeliverySuccessful)
	if got.ID != m.ID || got.Attempt != 1 || len(got.Timeline) != 3 {
		t.Errorf("get: %+v", got)
	}
	g, err := c.Get(ctx, m.ID)
	if err != nil || g.ID != m.ID || g.Status != herald.StatusDeliverySuccessful {
		t.Errorf("Get = %+v, %v", g, err)
	}

	// A text message without a target.
	text := send(t, c, client.SendRequest{Route: routeHooks, Text: "hello"})
	if text.Text != "hello" || text.Target != "" || text.Payload != "" {
		t.Errorf("text message view: %+v", text)
	}
}

func TestSendDeduplicated(t *testing.T) {
	s := newServer(t, nil)
	c := newClient(t, s.URL, keyAcme)
	first := send(t, c, client.SendRequest{Route: routeDedup, Text: "same"})
	waitFor(t, c, first.ID, herald.StatusDeliverySuccessful)
	res, err := c.Send(testCtx(t), client.SendRequest{Route: routeDedup, Text: "same"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Created || !res.Deduplicated || res.Message.ID != first.ID {
		t.Errorf("duplicate: created %v, deduplicated %v, id %s; want the first message %s, deduplicated", res.Created, res.Deduplicated, res.Message.ID, first.ID)
	}
}

func TestListPages(t *testing.T) {
	s := newServer(t, nil)
	c := newClient(t, s.URL, keyAcme)
	ctx := testCtx(t)
	var ids []string
	for range 5 {
		ids = append(ids, send(t, c, client.SendRequest{Route: routeHooks, Text: "x", CorrelationID: "batch"}).ID)
	}
	another := send(t, c, client.SendRequest{Route: routeHooks, Text: "x", CorrelationID: "another"})
	newestFirst := slices.Clone(ids)
	slices.Reverse(newestFirst)

	// Follow the cursors by hand.
	var got []string
	var sizes []int
	f := client.ListFilter{CorrelationID: "batch", Limit: 2}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatalf("more than 5 pages: %v", sizes)
		}
		p, err := c.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(p.Messages))
		for _, m := range p.Messages {
			got = append(got, m.ID)
		}
		if p.NextCursor == "" {
			break
		}
		f.Cursor = p.NextCursor
	}
	if !slices.Equal(got, newestFirst) {
		t.Errorf("pages gave %v, want %v (newest first)", got, newestFirst)
	}
	if len(sizes) < 3 || sizes[0] != 2 || sizes[1] != 2 || sizes[2] != 1 {
		t.Errorf("page sizes %v, want 2, 2, 1 (and perhaps an empty last one)", sizes)
	}

	// The iterator does the same.
	got = nil
	for m, err := range c.ListAll(ctx, client.ListFilter{CorrelationID: "batch", Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.ID)
	}
	if !slices.Equal(got, newestFirst) {
		t.Errorf("ListAll gave %v, want %v", got, newestFirst)
	}

	// Stopping early is fine.
	got = nil
	for m, err := range c.ListAll(ctx, client.ListFilter{CorrelationID: "batch", Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		if got = append(got, m.ID); len(got) == 3 {
			break
		}
	}
	if !slices.Equal(got, newestFirst[:3]) {
		t.Errorf("ListAll stopped after 3 gave %v, want %v", got, newestFirst[:3])
	}

	// The other filters reach the server.
	for _, m := range append(ids, another.ID) {
		waitFor(t, c, m, herald.StatusDeliverySuccessful)
	}
	p, err := c.List(ctx, client.ListFilter{Status: herald.StatusDeliverySuccessful, Route: routeHooks, CorrelationID: "another"})
	if err != nil || len(p.Messages) != 1 || p.Messages[0].ID != another.ID {
		t.Errorf("List by status, route and correlation id: %+v, %v", p, err)
	}
	if p, err := c.List(ctx, client.ListFilter{Status: herald.StatusQueued, CorrelationID: "another"}); err != nil || len(p.Messages) != 0 {
		t.Errorf("List by another status: %+v, %v; want none", p, err)
	}
	tgt := send(t, c, client.SendRequest{Route: routeHooks, Text: "x", Target: "only-me"})
	p, err = c.List(ctx, client.ListFilter{Target: "only-me"})
	if err != nil || len(p.Messages) != 1 || p.Messages[0].ID != tgt.ID {
		t.Errorf("List by target: %+v, %v", p, err)
	}

	// An iterator yields an error once and stops.
	n := 0
	for _, err := range c.ListAll(ctx, client.ListFilter{Limit: 5000}) {
		n++
		if e := wantAPIError(t, err, http.StatusBadRequest, client.CodeInvalidField); e.Field() != "limit" {
			t.Errorf("field %q, want limit", e.Field())
		}
	}
	if n != 1 {
		t.Errorf("a failing ListAll yielded %d times, want 1", n)
	}
}

func TestCancelReplayExplain(t *testing.T) {
	s := newServer(t, nil)
	c := newClient(t, s.URL, keyAcme)
	ctx := testCtx(t)

	// On the held route the first message goes and the second waits an hour.
	first := send(t, c, client.SendRequest{Route: routeHeld, Text: "one"})
	waitFor(t, c, first.ID, herald.StatusDeliverySuccessful)
	second := send(t, c, client.SendRequest{Route: routeHeld, Text: "two"})
	x, err := c.Explain(ctx, second.ID)
	if err != nil {
		t.Fatal(err)
	}
	if x.ID != second.ID || x.Status != herald.StatusQueued || x.Reason != "lane_spacing" || x.Until == nil || x.Detail == "" {
		t.Errorf("explain a held message: %+v, want lane_spacing until a time", x)
	}
	lanes, err := c.Lanes(ctx, client.LaneFilter{Route: routeHeld})
	if err != nil {
		t.Fatal(err)
	}
	if len(lanes) != 1 || lanes[0].Route != routeHeld || lanes[0].Queued != 1 || lanes[0].NextAt == nil {
		t.Errorf("lanes of the held route: %+v, want one with one queued and a next_at", lanes)
	}

	cancelled, err := c.Cancel(ctx, second.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.Status != herald.StatusCancelled {
		t.Errorf("cancelled: %s", cancelled.Status)
	}
	_, err = c.Cancel(ctx, second.ID)
	wantAPIError(t, err, http.StatusConflict, client.CodeNotCancellable)
	if !client.IsConflict(err) {
		t.Error("IsConflict(not_cancellable) = false")
	}
	if x, err := c.Explain(ctx, second.ID); err != nil || x.Reason != "terminal" {
		t.Errorf("explain a cancelled message: %+v, %v", x, err)
	}

	// A cancelled message can be replayed; a delivered one cannot.
	replayed, err := c.Replay(ctx, second.ID)
	if err != nil {
		t.Fatal(err)
	}
	if replayed.Status != herald.StatusQueued || replayed.Attempt != 0 {
		t.Errorf("replayed: %s attempt %d, want QUEUED attempt 0", replayed.Status, replayed.Attempt)
	}
	_, err = c.Replay(ctx, first.ID)
	wantAPIError(t, err, http.StatusConflict, client.CodeNotReplayable)

	// A message refused once fails, and its replay is delivered.
	m := send(t, c, client.SendRequest{Route: routeHooks, Target: "refuse-once", Text: "x"})
	failed, err := c.WaitFor(ctx, m.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if failed.Status != herald.StatusDeliveryFailed || !strings.Contains(failed.LastError, "400") {
		t.Fatalf("refused message: %s %q, want DELIVERY_FAILED with the 400", failed.Status, failed.LastError)
	}
	if _, err := c.Replay(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	done, err := c.WaitFor(ctx, m.ID, client.Terminal)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != herald.StatusDeliverySuccessful {
		t.Fatalf("after the replay: %s, want DELIVERY_SUCCESSFUL", done.Status)
	}
	var reasons []string
	for _, e := range done.Timeline {
		reasons = append(reasons, string(e.To)+" "+e.Reason)
	}
	if !slices.Contains(reasons, "QUEUED replayed by user") || !slices.ContainsFunc(reasons, func(r string) bool {
		return strings.HasPrefix(r, string(herald.StatusDeliveryFailed))
	}) {
		t.Errorf("the timeline lost the history: %q", reasons)
	}
}

func TestDeadLetters(t *testing.T) {
	s := newServer(t, nil)
	c := newClient(t, s.URL, keyAcme)
	ctx := testCtx(t)
	var ids []string
	for range 3 {
		m := send(t, c, client.SendRequest{Route: routeHooks, Target: "refuse", Text: "x"})
		ids = append(ids, m.ID)
	}
	ok := send(t, c, client.SendRequest{Route: routeHooks, Text: "fine"})
	for _, id := range ids {
		waitFor(t, c, id, herald.StatusDeliveryFailed)
	}
	waitFor(t, c, ok.ID, herald.StatusDeliverySuccessful)

	p, err := c.DeadLetters(ctx, client.DeadLetterFilter{Route: routeHooks, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Messages) != 2 || p.NextCursor == "" || p.Messages[0].LastError == "" {
		t.Errorf("first page of dead letters: %+v", p)
	}
	var all []string
	for m, err := range c.DeadLettersAll(ctx, client.DeadLetterFilter{Reason: "400", Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		if m.Status != herald.StatusDeliveryFailed {
			t.Errorf("dead letter %s is %s", m.ID, m.Status)
		}
		all = append(all, m.ID)
	}
	slices.Sort(all)
	if !slices.Equal(all, ids) {
		t.Errorf("DeadLettersAll = %v, want %v", all, ids)
	}
	if p, err := c.DeadLetters(ctx, client.DeadLetterFilter{Reason: "no such error"}); err != nil || len(p.Messages) != 0 {
		t.Errorf("dead letters of another reason: %+v, %v", p, err)
	}

	if n, err := c.ReplayDeadLetters(ctx, client.ReplayFilter{Route: routeHooks, Target: "another"}); err != nil || n != 0 {
		t.Fatalf("ReplayDeadLetters of another target = %d, %v; want 0", n, err)
	}
	n, err := c.ReplayDeadLetters(ctx, client.ReplayFilter{Route: routeHooks, Target: "refuse", Reason: "400", Since: time.Now().Add(-time.Hour), RatePerS: 1000})
	if err != nil || n != 3 {
		t.Fatalf("ReplayDeadLetters = %d, %v; want 3", n, err)
	}
	for _, id := range ids {
		m, err := c.WaitFor(ctx, id, func(m herald.MessageView) bool {
			return m.Status == herald.StatusDeliveryFailed && len(m.Timeline) > 4
		})
		if err != nil {
			t.Fatal(err)
		}
		if m.Timeline[3].Reason != "dead letter replayed" {
			t.Errorf("timeline of %s after the replay: %+v", id, m.Timeline)
		}
	}

	if n, err := c.PurgeDeadLetters(ctx, client.PurgeFilter{Route: routeHooks, Before: time.Now().Add(-time.Hour)}); err != nil || n != 0 {
		t.Errorf("purge of those failed an hour ago = %d, %v; want 0", n, err)
	}
	if n, err := c.PurgeDeadLetters(ctx, client.PurgeFilter{Route: routeHooks}); err != nil || n != 3 {
		t.Errorf("purge = %d, %v; want 3", n, err)
	}
	_, err = c.Get(ctx, ids[0])
	wantAPIError(t, err, http.StatusNotFound, client.CodeNotFound)
	if !client.IsNotFound(err) {
		t.Error("IsNotFound(404) = false")
	}
}

func TestErrorsCarryTheCode(t *testing.T) {
	s := newServer(t, nil)
	c := newClient(t, s.URL, keyAcme)
	ctx := testCtx(t)

	for _, tc := range []struct {
		name  string
		req   client.SendRequest
		code  string
		field string
	}{
		{"priority over the limit", client.SendRequest{Route: routeHooks, Text: "x", Priority: 1001}, client.CodeInvalidField, "priority"},
		{"no route", client.SendRequest{Text: "x"}, client.CodeMissingField, "route"},
		{"unknown route", client.SendRequest{Route: "nowhere", Text: "x"}, client.CodeUnknownRoute, "route"},
		{"payload and text", client.SendRequest{Route: routeHooks, Text: "x", Payload: []byte("y")}, client.CodeInvalidField, "payload"},
		{"a long correlation id", client.SendRequest{Route: routeHooks, Text: "x", CorrelationID: strings.Repeat("c", 257)}, client.CodeInvalidField, "correlation_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Send(ctx, tc.req)
			e := wantAPIError(t, err, http.StatusBadRequest, tc.code)
			if e.Field() != tc.field {
				t.Errorf("Field() = %q, want %q (message %q)", e.Field(), tc.field, e.Message)
			}
			if !client.IsInvalid(err) {
				t.Error("IsInvalid = false")
			}
			if !strings.Contains(err.Error(), tc.code) {
				t.Errorf("the error's text %q does not say its code", err)
			}
		})
	}
	p, err := c.List(ctx, client.ListFilter{})
	if err != nil || len(p.Messages) != 0 {
		t.Errorf("bad sends stored something: %+v, %v", p, err)
	}

	_, err = c.List(ctx, client.ListFilter{Cursor: "garbage"})
	if e := wantAPIError(t, err, http.StatusBadRequest, client.CodeInvalidField); e.Field() != "cursor" {
		t.Errorf("a garbage cursor: field %q, want cursor", e.Field())
	}
	_, err = c.List(ctx, client.ListFilter{Status: "LOST"})
	if e := wantAPIError(t, err, http.StatusBadRequest, client.CodeInvalidField); e.Field() != "status" {
		t.Errorf("an unknown status: field %q, want status", e.Field())
	}

	// An unknown field, through Do.
	err = c.Do(ctx, http.MethodPost, "/v1/messages", map[string]string{"route": routeHooks, "text": "x", "coalesce-key": "k"}, nil)
	if e := wantAPIError(t, err, http.StatusBadRequest, client.CodeUnknownField); e.Field() != "coalesce-key" {
		t.Errorf("unknown field: Field() = %q, want coalesce-key", e.Field())
	}

	_, err = c.Get(ctx, "0192f0a0-0000-7000-8000-000000000000")
	wantAPIError(t, err, http.StatusNotFound, client.CodeNotFound)
	_, err = c.Explain(ctx, "no-such-id")
	wantAPIError(t, err, http.StatusNotFound, client.CodeNotFound)

	// Another tenant's message is not found.
	m := send(t, c, client.SendRequest{Route: routeHooks, Text: "mine"})
	other := newClient(t, s.URL, keyOther)
	_, err = other.Get(ctx, m.ID)
	wantAPIError(t, err, http.StatusNotFound, client.CodeNotFound)
	_, err = other.Cancel(ctx, m.ID)
	wantAPIError(t, err, http.StatusNotFound, client.CodeNotFound)

	// A read-only key reads, and changes nothing.
	reader := newClient(t, s.URL, keyReader)
	if _, err := reader.Get(ctx, m.ID); err != nil {
		t.Errorf("a read-only key's Get: %v", err)
	}
	_, err = reader.Cancel(ctx, m.ID)
	wantAPIError(t, err, http.StatusForbidden, client.CodeForbidden)
	if !client.IsForbidden(err) || client.IsUnauthorized(err) {
		t.Errorf("a read-only key's Cancel: IsForbidden %v, IsUnauthorized %v", client.IsForbidden(err), client.IsUnauthorized(err))
	}

	// A wrong key and no key.
	for _, key := range []string{"wrong", ""} {
		_, err = newClient(t, s.URL, key).Get(ctx, m.ID)
		wantAPIError(t, err, http.StatusUnauthorized, client.CodeUnauthorized)
		if !client.IsUnauthorized(err) || client.IsNotFound(err) {
			t.Errorf("key %q: IsUnauthorized %v, IsNotFound %v", key, client.IsUnauthorized(err), client.IsNotFound(err))
		}
	}

	// Not an API error at all.
	if client.ErrorCode(errors.New("x")) != "" || client.IsNotFound(nil) {
		t.Error("the helpers see an API error where there is none")
	}
}

func TestMonitoring(t *testing.T) {
	s := newServer(t, nil)
	c := newClient(t, s.URL, keyAcme)
	ctx := testCtx(t)
	ok := send(t, c, client.SendRequest{Route: routeHooks, Text: "x"})
	bad := send(t, c, client.SendRequest{Route: routeHooks, Text: "x", Target: "refuse"})
	waitFor(t, c, ok.ID, herald.StatusDeliverySuccessful)
	waitFor(t, c, bad.ID, herald.StatusDeliveryFailed)

	st, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.ByStatus[herald.StatusDeliverySuccessful] != 1 || st.ByStatus[herald.StatusDeliveryFailed] != 1 ||
		st.ByRoute[routeHooks][herald.StatusDeliveryFailed] != 1 || st.DeadLetters != 1 || st.SuccessRate != 0.5 ||
		st.Enqueued != 2 || st.Succeeded != 1 {
		t.Errorf("stats: %+v", st)
	}
	h, err := c.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Status != "healthy" || h.Message != "Healthy" || h.DeadLetters != 1 || h.Warnings == nil {
		t.Errorf("health: %+v", h)
	}
	act, err := c.Activity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var succeeded int64
	for _, m := range act {
		succeeded += m.Succeeded
	}
	if len(act) != herald.ActivityMinutes || succeeded != 1 {
		t.Errorf("activity: %d minutes, %d succeeded; want %d, 1", len(act), succeeded, herald.ActivityMinutes)
	}
	if lanes, err := c.Lanes(ctx, client.LaneFilter{}); err != nil || len(lanes) != 0 {
		t.Errorf("lanes with nothing held: %+v, %v", lanes, err)
	}
	_, err = c.Lanes(ctx, client.LaneFilter{Route: "nowhere"})
	wantAPIError(t, err, http.StatusBadRequest, client.CodeUnknownRoute)
	if err := c.Ready(ctx); err != nil {
		t.Errorf("Ready: %v", err)
	}
}

func TestDoKeepsTheRawAnswer(t *testing.T) {
	s := newServer(t, nil)
	c := newClient(t, s.URL, keyAcme)
	ctx := testCtx(t)
	m := send(t, c, client.SendRequest{Route: routeHooks, Text: "x"})
	var raw json.RawMessage
	if err := c.Do(ctx, http.MethodGet, "/v1/messages/"+m.ID, nil, &raw); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil || v["id"] != m.ID || v["timeline"] == nil {
		t.Errorf("raw answer %s: %v", raw, err)
	}
	err := c.Do(ctx, http.MethodGet, "/v1/nothing-here", nil, nil)
	wantAPIError(t, err, http.StatusNotFound, client.CodeNotFound)
	if err := c.Do(ctx, http.MethodGet, "v1/messages", nil, nil); err == nil {
		t.Error("Do accepted a path without a leading /")
	}
}

func TestWaitForStopsWithTheContext(t *testing.T) {
	s := newServer(t, nil)
	c := newClient(t, s.URL, keyAcme, func(cfg *client.Config) { cfg.PollInterval = 20 * time.Millisecond })
	first := send(t, c, client.SendRequest{Route: routeHeld, Text: "one"})
	waitFor(t, c, first.ID, herald.StatusDeliverySuccessful)
	held := send(t, c, client.SendRequest{Route: routeHeld, Text: "two"}) // waits an hour

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	m, err := c.WaitFor(ctx, held.ID, client.Terminal)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitFor = %v, want the context's deadline", err)
	}
	if m.ID != held.ID || m.Status != herald.StatusQueued {
		t.Errorf("WaitFor returned %+v, want the message as last read (QUEUED)", m)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("WaitFor took %v after a 200ms deadline", d)
	}

	// An error reading the message ends the wait at once.
	_, err = c.WaitFor(testCtx(t), "no-such-id", nil)
	wantAPIError(t, err, http.StatusNotFound, client.CodeNotFound)
}

func TestDeadOutcomeEvents(t *testing.T) {
	s := newServer(t, nil)
	c := newClient(t, s.URL, keyAcme)
	ctx := testCtx(t)
	m := send(t, c, client.SendRequest{Route: routeHooks, Text: "x"})
	waitFor(t, c, m.ID, herald.StatusDeliverySuccessful)
	var page client.DeadEventPage
	for len(page.Events) == 0 {
		var err error
		if page, err = c.DeadEvents(ctx, client.DeadEventFilter{Subscriber: "gone", Limit: 10}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	e := page.Events[0]
	if e.MessageID != m.ID || e.Subscriber != "gone" || e.Type != herald.StatusDeliverySuccessful || e.Attempts != 1 || e.LastError == "" {
		t.Errorf("dead event %+v", e)
	}
	if other, err := newClient(t, s.URL, keyOther).DeadEvents(ctx, client.DeadEventFilter{}); err != nil || len(other.Events) != 0 {
		t.Errorf("another tenant's dead events: %+v, %v; want none", other, err)
	}
	n, err := c.ReplayEvents(ctx, client.EventReplay{IDs: []string{e.ID}})
	if err != nil || n != 1 {
		t.Errorf("replay: %d, %v; want 1", n, err)
	}
	_, err = c.ReplayEvents(ctx, client.EventReplay{IDs: []string{e.ID}, Subscriber: "gone"})
	wantAPIError(t, err, http.StatusBadRequest, client.CodeInvalidField)
}

func TestPausesRoutesAndOrphans(t *testing.T) {
	s := newServer(t, nil)
	c := newClient(t, s.URL, keyOps)
	ctx := testCtx(t)
	_, err := newClient(t, s.URL, keyAcme).PauseLane(ctx, client.Pause{Route: routeHooks})
	wantAPIError(t, err, http.StatusForbidden, client.CodeForbidden)
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	p, err := c.PauseLane(ctx, client.Pause{Route: routeHooks, Lane: "a", Until: until, Reason: "maintenance"})
	if err != nil || p.Route != routeHooks || p.Lane != "a" || p.Until == nil || !p.Until.Equal(until) || p.Reason != "maintenance" {
		t.Fatalf("PauseLane = %+v, %v", p, err)
	}
	held := send(t, c, client.SendRequest{Route: routeHooks, Lane: "a", Text: "x"})
	if x, err := c.Explain(ctx, held.ID); err != nil || x.Reason != "lane_paused" {
		t.Errorf("explain of a paused lane's message = %+v, %v", x, err)
	}
	if ps, err := c.LanePauses(ctx, ""); err != nil || len(ps) != 1 {
		t.Errorf("LanePauses = %+v, %v; want the one", ps, err)
	}
	if ok, err := c.ResumeLane(ctx, routeHooks, "a"); err != nil || !ok {
		t.Errorf("ResumeLane = %v, %v", ok, err)
	}
	waitFor(t, c, held.ID, herald.StatusDeliverySuccessful)
	_, err = c.PauseLane(ctx, client.Pause{Route: "nowhere"})
	wantAPIError(t, err, http.StatusBadRequest, client.CodeUnknownRoute)

	v, err := c.Routes(ctx)
	if err != nil || len(v.Routes) == 0 || len(v.Orphaned) != 0 {
		t.Errorf("Routes = %+v, %v", v, err)
	}
	_, err = c.FailOrphans(ctx, routeHooks)
	wantAPIError(t, err, http.StatusConflict, client.CodeRouteConfigured)
	if n, err := c.FailOrphans(ctx, "gone"); err != nil || n != 0 {
		t.Errorf("FailOrphans of a route with none = %d, %v", n, err)
	}
}
