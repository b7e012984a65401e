package herald_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/notify"
)

// receiver is an outcome-event receiver of the original device-messaging
// system: it verifies the hex HMAC-SHA256 of the raw body in X-Signature,
// and answers 500 to the first fail requests, 200 after.
type receiver struct {
	t      *testing.T
	clock  interface{ Now() time.Time }
	secret []byte

	mu    sync.Mutex
	fail  int
	times []time.Time
	bad   int // requests whose signature did not verify
}

func (v *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	mac := hmac.New(sha256.New, v.secret)
	mac.Write(body)
	v.mu.Lock()
	defer v.mu.Unlock()
	if !hmac.Equal([]byte(r.Header.Get("X-Signature")), []byte(hex.EncodeToString(mac.Sum(nil)))) {
		v.bad++
	}
	v.times = append(v.times, v.clock.Now())
	if v.fail > 0 {
		v.fail--
		w.WriteHeader(http.StatusInternalServerError)
	}
}

// since returns the requests' times since the first.
func (v *receiver) since() []time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []time.Duration
	for _, t := range v.times {
		out = append(out, t.Sub(v.times[0]))
	}
	return out
}

// outcomeRig is a rig whose route "hooks" delivers at once, with one
// outcome subscriber, "legacy", signing as hmac-sha256 at a receiver
// that fails its first fail requests; subscriber defaults for the rest.
func outcomeRig(t *testing.T, fail int) (*rig, *receiver) {
	t.Helper()
	v := &receiver{t: t, secret: []byte("shared-secret"), fail: fail}
	srv := httptest.NewServer(v)
	t.Cleanup(srv.Close)
	p, _ := herald.ProfilePolicy(herald.ProfileChannel)
	var r *rig
	r = newRigWith(t, func(c *herald.Config) {
		sink, err := notify.New(srv.URL, v.secret, nil, func() time.Time { return c.Clock.Now() })
		if err != nil {
			t.Fatal(err)
		}
		c.Subscribers = []herald.Subscriber{{Name: "legacy", Sink: sink.HMAC("", "")}}
	}, []herald.Route{{Name: "hooks", Carrier: &logCarrier{}, Policy: p}})
	v.clock = r.clock
	return r, v
}

// TestOutcomeRetriesAsTheOriginalReceiversExpect: a receiver answering
// 500 five times, then 200, gets 6 deliveries of the event, at 0, 2, 6,
// 14, 30 and 62 s (retries after 2, 4, 8, 16, 32 s), each signed with the
// hex HMAC-SHA256 of its body in X-Signature.
func TestOutcomeRetriesAsTheOriginalReceiversExpect(t *testing.T) {
	r, v := outcomeRig(t, 5)
	r.start()
	r.send(herald.SendRequest{Route: "hooks", Text: "hi"})
	r.settle()
	for _, gap := range []time.Duration{2, 4, 8, 16, 32} {
		r.advance(gap * time.Second)
	}
	r.advance(time.Hour)
	want := []time.Duration{0, 2 * time.Second, 6 * time.Second, 14 * time.Second, 30 * time.Second, 62 * time.Second}
	if got := v.since(); !slices.Equal(got, want) {
		t.Fatalf("deliveries at %v, want at %v", got, want)
	}
	if v.bad != 0 {
		t.Errorf("%d deliveries whose X-Signature did not verify", v.bad)
	}
	if dead, _, err := r.eng.DeadEvents(context.Background(), "acme", herald.DeadEventFilter{}); err != nil || len(dead) != 0 {
		t.Errorf("dead events %v, %v; want none: the sixth was delivered", dead, err)
	}
}

// TestDeadOutcomeEventIsListedAndReplayed: a receiver that always answers
// 500 gets 6 deliveries, then the event is dead: listed (for its tenant
// only) with its attempts and last error, and replayed, delivered once
// the receiver answers again.
func TestDeadOutcomeEventIsListedAndReplayed(t *testing.T) {
	r, v := outcomeRig(t, 1000)
	r.start()
	m := r.send(herald.SendRequest{Route: "hooks", Text: "hi"})
	for range 10 {
		r.advance(time.Minute)
	}
	ctx := context.Background()
	dead, next, err := r.eng.DeadEvents(ctx, "acme", herald.DeadEventFilter{})
	if err != nil || len(dead) != 1 || next != "" {
		t.Fatalf("dead events: %v, %q, %v; want one", dead, next, err)
	}
	d := dead[0]
	if d.MessageID != m.ID || d.Subscriber != "legacy" || d.Attempts != 6 || d.Type != herald.StatusDeliverySuccessful || d.LastError == "" {
		t.Errorf("dead event %+v: want the message's, 6 attempts, with its last error", d)
	}
	if n := len(v.since()); n != 6 {
		t.Errorf("%d deliveries before the event died, want 6", n)
	}
	if other, _, err := r.eng.DeadEvents(ctx, "globex", herald.DeadEventFilter{}); err != nil || len(other) != 0 {
		t.Errorf("another tenant's dead events: %v, %v; want none", other, err)
	}
	if _, err := r.eng.ReplayEvents(ctx, "acme", herald.EventReplay{IDs: []string{d.ID}, Subscriber: "legacy"}); err == nil {
		t.Error("a replay of ids and a filter: no error")
	}
	v.mu.Lock()
	v.fail = 0
	v.mu.Unlock()
	n, err := r.eng.ReplayEvents(ctx, "acme", herald.EventReplay{Subscriber: "legacy"})
	if err != nil || n != 1 {
		t.Fatalf("replay: %d, %v; want 1", n, err)
	}
	r.advance(time.Second)
	if got := len(v.since()); got != 7 {
		t.Errorf("%d deliveries after the replay, want 7", got)
	}
	if dead, _, err := r.eng.DeadEvents(ctx, "acme", herald.DeadEventFilter{}); err != nil || len(dead) != 0 {
		t.Errorf("dead events after the replay: %v, %v; want none", dead, err)
	}
}
