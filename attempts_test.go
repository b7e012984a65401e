package herald_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// answering returns a server that answers its requests with answers in
// turn (status and body), then 200.
func answering(t *testing.T, answers ...struct {
	status int
	body   string
}) *httptest.Server {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		i := int(n.Add(1)) - 1
		if i >= len(answers) {
			return
		}
		w.WriteHeader(answers[i].status)
		w.Write([]byte(answers[i].body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestEveryAttemptsAnswerKept: a webhook message answered 503, then 500,
// then 400 keeps the three answers, with their texts, on the entries that
// end its attempts; explain says it ended on a permanent error, with the
// 400's text, and that a replay would fail the same way. A replay keeps
// them, and the accepted send's answer is kept too.
func TestEveryAttemptsAnswerKept(t *testing.T) {
	srv := answering(t, []struct {
		status int
		body   string
	}{
		{http.StatusServiceUnavailable, "down for maintenance"},
		{http.StatusInternalServerError, "database is gone"},
		{http.StatusBadRequest, "field colour is unknown"},
	}...)
	r := newRig(t, []herald.Route{webhookRoute(t, "hooks", srv.URL, herald.ProfileChannel)})
	r.start()
	m := r.send(herald.SendRequest{Route: "hooks", Text: "hello"})
	r.settle()
	for range 4 {
		if r.get(m.ID).Status.Terminal() {
			break
		}
		r.advance(time.Minute)
	}
	got := r.get(m.ID)
	if got.Status != herald.StatusDeliveryFailed || got.Attempt != 3 {
		t.Fatalf("ended %s at attempt %d, want DELIVERY_FAILED at 3", got.Status, got.Attempt)
	}
	want := []struct{ answer, text string }{{"503", "down for maintenance"}, {"500", "database is gone"}, {"400", "field colour is unknown"}}
	var ends []herald.TimelineEntry
	for _, e := range got.Timeline {
		if e.From == herald.StatusSentToNS {
			ends = append(ends, e)
		}
	}
	if len(ends) != len(want) {
		t.Fatalf("%d entries end an attempt, want %d: %+v", len(ends), len(want), got.Timeline)
	}
	for i, w := range want {
		if e := ends[i]; e.Answer != w.answer || !strings.Contains(e.Error, w.text) || e.Attempt != i+1 {
			t.Errorf("attempt %d's entry: attempt %d, answer %q, error %q; want %s with %q", i+1, e.Attempt, e.Answer, e.Error, w.answer, w.text)
		}
	}
	v := got.View()
	if tv := v.Timeline[len(v.Timeline)-1]; tv.Answer != "400" || !strings.Contains(tv.Error, "field colour is unknown") {
		t.Errorf("the view's last entry: %+v, want the 400 and its text", tv)
	}
	x, err := r.eng.Explain(context.Background(), "acme", m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if x.Reason != "terminal" || !strings.Contains(x.Detail, "permanent error") || !strings.Contains(x.Detail, "field colour is unknown") ||
		!strings.Contains(x.Detail, "a replay will fail the same way") || x.ReplayHelps == nil || *x.ReplayHelps {
		t.Errorf("explain = %+v, want terminal, a permanent error with the 400's text, no replay helps", x)
	}

	if _, err := r.eng.Replay(context.Background(), "acme", m.ID); err != nil {
		t.Fatal(err)
	}
	r.settle()
	got = r.get(m.ID)
	if got.Status != herald.StatusDeliverySuccessful {
		t.Fatalf("replayed: %s, want DELIVERY_SUCCESSFUL", got.Status)
	}
	var answers []string
	for _, e := range got.Timeline {
		if e.Answer != "" {
			answers = append(answers, e.Answer)
		}
	}
	if strings.Join(answers, ",") != "503,500,400,200" {
		t.Errorf("answers after the replay: %v, want 503,500,400,200", answers)
	}
}

// TestExplainWhyItEnded: attempts used up says so with the last error,
// and that a replay can help once the carrier is back; a cancelled
// message says it was cancelled.
func TestExplainWhyItEnded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "still down", http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	route := webhookRoute(t, "hooks", srv.URL, herald.ProfileChannel)
	route.Policy.MaxAttempts = 2
	r := newRig(t, []herald.Route{route})
	r.start()
	m := r.send(herald.SendRequest{Route: "hooks", Text: "hello"})
	r.settle()
	r.advance(time.Minute)
	x, err := r.eng.Explain(context.Background(), "acme", m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if x.Status != herald.StatusDeliveryFailed || !strings.Contains(x.Detail, "attempts used up (2 of 2)") || !strings.Contains(x.Detail, "still down") ||
		!strings.Contains(x.Detail, "a replay can help once the carrier is back") || x.ReplayHelps == nil || !*x.ReplayHelps {
		t.Errorf("explain = %+v, want attempts used up with the last error, a replay helps", x)
	}
}
