package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

func testInbound(t *testing.T, open opener) {
	t.Run("RoundTrip", func(t *testing.T) {
		h := open(t)
		full := herald.Inbound{
			ID: "in-1", Route: "r1", Kind: herald.InboundUplink, ExternalID: "q-1", Correlation: "dedup-1",
			Acknowledged: true, Permanent: true, Reason: "TX_ACK | too late", Device: "0102030405060708",
			Uplink: []byte(`{"data":"AQI=","fPort":1}`), At: at(1234 * time.Millisecond), DueAt: at(1500 * time.Millisecond),
		}
		bare := herald.Inbound{ID: "in-2", Route: "r2", Kind: herald.InboundFailed, At: t0, DueAt: t0}
		h.addInbound(full, bare)
		got := h.claimInbound(at(2*time.Second), 10, at(time.Minute))
		if len(got) != 2 {
			t.Fatalf("claim: %d events, want 2", len(got))
		}
		for i, want := range []herald.Inbound{bare, full} {
			if d := diffInbound(got[i], want); len(d) > 0 {
				t.Errorf("claimed event %d: %v", i, d)
			}
		}
		byCorr := h.byCorrelation("r1", "dedup-1")
		if len(byCorr) != 1 {
			t.Fatalf("InboundByCorrelation: %d events, want 1", len(byCorr))
		}
		want := full
		want.DueAt = byCorr[0].DueAt // claimed: due at the lease's end, or as added
		if d := diffInbound(byCorr[0], want); len(d) > 0 {
			t.Errorf("InboundByCorrelation: %v", d)
		}
	})

	t.Run("Order", func(t *testing.T) {
		h := open(t)
		h.addInbound(
			inbound("e", at(3*time.Second)),
			inbound("b", at(time.Second)),
			inbound("d", at(2*time.Second)),
			inbound("a", at(2*time.Second)),
			inbound("c", at(time.Second)),
			inbound("later", at(time.Minute)),
		)
		for _, limit := range []int{0, -1} {
			if got := h.claimInbound(at(time.Hour), limit, at(2*time.Hour)); got != nil {
				t.Errorf("claim with limit %d: %v, want nil", limit, inboundIDs(got))
			}
		}
		if got := h.claimInbound(t0, 10, at(time.Hour)); len(got) != 0 {
			t.Errorf("claim before any is due: %v, want none", inboundIDs(got))
		}
		var order []string
		for range 3 {
			order = append(order, inboundIDs(h.claimInbound(at(3*time.Second), 2, at(time.Hour)))...)
		}
		if want := []string{"b", "c", "a", "d", "e"}; !slices.Equal(order, want) {
			t.Errorf("claims of 2 at +3s: %v, want %v (earliest due first, then by id)", order, want)
		}
		got := h.claimInbound(at(time.Minute), 10, at(time.Hour))
		if ids := inboundIDs(got); !slices.Equal(ids, []string{"later"}) {
			t.Errorf("claim at +1m: %v, want [later]", ids)
		} else if !sameTime(got[0].DueAt, at(time.Minute)) {
			t.Errorf("claimed DueAt %v, want %v, as added", got[0].DueAt, at(time.Minute))
		}
	})

	t.Run("LeaseHides", func(t *testing.T) {
		h := open(t)
		h.addInbound(inbound("a", t0), inbound("b", t0))
		if got := h.claimInbound(t0, 10, at(30*time.Second)); len(got) != 2 {
			t.Fatalf("first claim: %v, want both", inboundIDs(got))
		}
		if got := h.claimInbound(at(29*time.Second), 10, at(time.Hour)); len(got) != 0 {
			t.Errorf("claim within the lease: %v, want none", inboundIDs(got))
		}
		if got := h.claimInbound(at(30*time.Second), 10, at(time.Hour)); !sameSet(inboundIDs(got), []string{"a", "b"}) {
			t.Errorf("claim at the lease's end: %v, want both back", inboundIDs(got))
		}
	})

	t.Run("AddTwice", func(t *testing.T) {
		h := open(t)
		ev := inbound("a", t0)
		ev.Correlation = "c"
		h.addInbound(ev)
		again := ev
		again.Reason = "retried ingress"
		h.addInbound(again)
		if got := h.claimInbound(t0, 10, at(time.Hour)); len(got) != 1 || got[0].ID != "a" {
			t.Errorf("claim: %v, want one event a", inboundIDs(got))
		}
		if got := h.byCorrelation("r1", "c"); len(got) != 1 {
			t.Errorf("InboundByCorrelation: %v, want one event a", inboundIDs(got))
		}
	})

	t.Run("SettledNotAddedAgain", func(t *testing.T) {
		h := open(t)
		h.addInbound(inbound("a", t0), inbound("b", at(time.Hour)))
		h.claimInbound(at(time.Hour), 10, at(2*time.Hour))
		h.settleInbound(herald.InboundSettle{Done: []string{"a", "b"}})
		late := inbound("a", at(3*time.Hour)) // a copy of a, from another node's session
		h.addInbound(late, inbound("b", at(3*time.Hour)))
		if got := h.claimInbound(at(4*time.Hour), 10, at(5*time.Hour)); len(got) != 0 {
			t.Fatalf("claim after late copies of settled events: %v, want none", inboundIDs(got))
		}
		// The pruner's cut passes a's arrival, not b's: a's id is forgotten.
		if _, err := h.s.Prune(h.ctx, at(30*time.Minute), 10); err != nil {
			t.Fatal(err)
		}
		h.addInbound(late, inbound("b", at(3*time.Hour)))
		if got := h.claimInbound(at(4*time.Hour), 10, at(5*time.Hour)); !slices.Equal(inboundIDs(got), []string{"a"}) {
			t.Errorf("claim after the prune: %v, want [a] (b's id is still remembered)", inboundIDs(got))
		}
	})

	t.Run("ByCorrelation", func(t *testing.T) {
		h := open(t)
		ack := inbound("ack", t0)
		ack.Kind, ack.Correlation, ack.Acknowledged = herald.InboundAck, "c1", true
		up := inbound("up", at(time.Minute))
		up.Kind, up.Correlation, up.Uplink = herald.InboundUplink, "c1", []byte(`{}`)
		other := inbound("other", t0)
		other.Correlation = "c2"
		elsewhere := inbound("elsewhere", t0)
		elsewhere.Route, elsewhere.Correlation = "r2", "c1"
		none := inbound("none", t0)
		h.addInbound(ack, up, other, elsewhere, none)
		if got := h.claimInbound(t0, 10, at(time.Hour)); !sameSet(inboundIDs(got), []string{"ack", "other", "elsewhere", "none"}) {
			t.Fatalf("claim: %v, want every event due at t0", inboundIDs(got))
		}

		got := h.byCorrelation("r1", "c1")
		slices.SortFunc(got, func(a, b herald.Inbound) int { return cmp.Compare(a.ID, b.ID) })
		if ids := inboundIDs(got); !slices.Equal(ids, []string{"ack", "up"}) {
			t.Fatalf("r1/c1: %v, want [ack up], claimed or not", ids)
		}
		wantAck := ack
		wantAck.DueAt = got[0].DueAt // claimed
		if d := diffInbound(got[0], wantAck); len(d) > 0 {
			t.Errorf("r1/c1 ack: %v", d)
		}
		if d := diffInbound(got[1], up); len(d) > 0 {
			t.Errorf("r1/c1 uplink (not claimed): %v", d)
		}
		for _, c := range []struct {
			route, corr string
			want        []string
		}{
			{"r1", "c2", []string{"other"}},
			{"r2", "c1", []string{"elsewhere"}},
			{"r2", "c2", nil},
			{"r1", "c3", nil},
			{"r1", "", nil},
		} {
			if got := inboundIDs(h.byCorrelation(c.route, c.corr)); !sameSet(got, c.want) {
				t.Errorf("%s/%q: %v, want %v", c.route, c.corr, got, c.want)
			}
		}
	})

	t.Run("Settle", func(t *testing.T) {
		h := open(t)
		var evs []herald.Inbound
		for _, id := range []string{"done-1", "done-2", "later", "kept"} {
			ev := inbound(id, t0)
			ev.Correlation = "c"
			evs = append(evs, ev)
		}
		h.addInbound(evs...)
		if got := h.claimInbound(t0, 10, at(time.Hour)); len(got) != 4 {
			t.Fatalf("claim: %v, want 4 events", inboundIDs(got))
		}
		h.settleInbound(herald.InboundSettle{
			Done:  []string{"done-1", "no-such-event", "done-2"},
			Later: "later", DueAt: at(10 * time.Second),
		})
		if got := inboundIDs(h.byCorrelation("r1", "c")); !sameSet(got, []string{"later", "kept"}) {
			t.Errorf("InboundByCorrelation after the settle: %v, want [later kept]: the done are gone", got)
		}
		if got := h.claimInbound(at(9*time.Second), 10, at(2*time.Hour)); len(got) != 0 {
			t.Errorf("claim before Later's DueAt: %v, want none", inboundIDs(got))
		}
		got := h.claimInbound(at(10*time.Second), 10, at(2*time.Hour))
		if ids := inboundIDs(got); !slices.Equal(ids, []string{"later"}) {
			t.Fatalf("claim at Later's DueAt: %v, want [later] (kept is still leased)", ids)
		}
		if !sameTime(got[0].DueAt, at(10*time.Second)) {
			t.Errorf("claimed DueAt %v, want Later's DueAt %v", got[0].DueAt, at(10*time.Second))
		}
		h.settleInbound(herald.InboundSettle{Later: "no-such-event", DueAt: t0})
		h.settleInbound(herald.InboundSettle{})
		if got := h.claimInbound(at(3*time.Hour), 10, at(4*time.Hour)); !sameSet(inboundIDs(got), []string{"later", "kept"}) {
			t.Errorf("claim after the leases: %v, want [later kept]", inboundIDs(got))
		}
		h.settleInbound(herald.InboundSettle{Done: []string{"later", "kept"}})
		if got := h.claimInbound(at(24*time.Hour), 10, at(25*time.Hour)); len(got) != 0 {
			t.Errorf("claim after every event is done: %v, want none", inboundIDs(got))
		}
		if got := h.byCorrelation("r1", "c"); len(got) != 0 {
			t.Errorf("InboundByCorrelation after every event is done: %v, want none", inboundIDs(got))
		}
	})

	t.Run("Uplink", func(t *testing.T) {
		h := open(t)
		// A message's outcome event, beside the uplinks': it has no Data.
		m := h.create(newMessage("r1"))
		h.walk(m.ID, t0, herald.StatusQueued, herald.StatusSentToNS)
		h.transition(herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, At: t0, Notify: []string{"a"}})

		h.addInbound(inbound("up-1", t0))
		body := []byte(`{"devEui":"0102030405060708","data":"AQI="}`)
		uplink := &herald.Event{ID: "uplink.up-1", Type: herald.EventUplink, At: at(time.Second), Data: body}
		settle := herald.InboundSettle{Done: []string{"up-1"}, Event: uplink, Notify: []string{"a", "b"}}
		h.settleInbound(settle)
		if got := h.claimInbound(at(time.Hour), 10, at(2*time.Hour)); len(got) != 0 {
			t.Errorf("claim inbound after the settle: %v, want none", inboundIDs(got))
		}

		evs := h.events(t0)
		if len(evs) != 1 || evs[0].MessageID != m.ID || len(evs[0].Data) != 0 {
			t.Fatalf("events at t0: %+v, want only the message's, without Data", evs)
		}
		if err := h.s.SettleEvent(h.ctx, herald.EventResult{ID: evs[0].ID, RetryAt: at(48 * time.Hour), Attempt: 1}); err != nil {
			t.Fatalf("SettleEvent %s: %v", evs[0].ID, err)
		}
		h.settleInbound(settle) // a settle applied twice enqueues nothing more
		evs = h.events(at(time.Second))
		if len(evs) != 2 {
			t.Fatalf("events at +1s: %+v, want the 2 uplink events", evs)
		}
		bySub := map[string]herald.Event{}
		for _, e := range evs {
			bySub[e.Subscriber] = e
		}
		for _, sub := range settle.Notify {
			e, ok := bySub[sub]
			if !ok {
				t.Errorf("no uplink event for %s among %+v", sub, evs)
				continue
			}
			if e.ID != uplink.ID+"."+sub || e.MessageID != "" || e.Type != uplink.Type || !sameTime(e.At, uplink.At) ||
				e.Attempt != 0 || string(e.Data) != string(body) {
				t.Errorf("uplink event for %s: %+v, want id %s, type %s, at %v, attempt 0, Data %s",
					sub, e, uplink.ID+"."+sub, uplink.Type, uplink.At, body)
			}
		}

		settleEvent := func(r herald.EventResult) {
			t.Helper()
			if err := h.s.SettleEvent(h.ctx, r); err != nil {
				t.Fatalf("SettleEvent %s: %v", r.ID, err)
			}
		}
		settleEvent(herald.EventResult{ID: bySub["a"].ID, Delivered: true, Attempt: 1})
		settleEvent(herald.EventResult{ID: bySub["b"].ID, RetryAt: at(time.Hour), Attempt: 1, Error: "503"})
		if evs := h.events(at(59 * time.Minute)); len(evs) != 0 {
			t.Errorf("events before the retry: %+v, want none", evs)
		}
		evs = h.events(at(time.Hour))
		if len(evs) != 1 || evs[0].ID != bySub["b"].ID || evs[0].Attempt != 1 || string(evs[0].Data) != string(body) {
			t.Fatalf("events at the retry: %+v, want b's uplink event at attempt 1 with its Data", evs)
		}
		settleEvent(herald.EventResult{ID: evs[0].ID, Dead: true, Attempt: 2, Error: "410"})
		if evs := h.events(at(48 * time.Hour)); len(evs) != 1 || evs[0].MessageID != m.ID {
			t.Errorf("events much later: %+v, want only the message's (the uplinks' delivered and dead)", evs)
		}
	})

	t.Run("UplinkWithoutNotify", func(t *testing.T) {
		h := open(t)
		h.addInbound(inbound("up-1", t0))
		h.settleInbound(herald.InboundSettle{Done: []string{"up-1"}, Event: &herald.Event{ID: "uplink.up-1", Type: "uplink", At: t0, Data: []byte("{}")}})
		if evs := h.events(at(time.Hour)); len(evs) != 0 {
			t.Errorf("events: %+v, want none: no subscriber to notify", evs)
		}
		if got := h.claimInbound(at(time.Hour), 10, at(2*time.Hour)); len(got) != 0 {
			t.Errorf("claim inbound: %v, want none (done)", inboundIDs(got))
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		h := open(t)
		const n = 300
		evs := make([]herald.Inbound, n)
		for i := range evs {
			evs[i] = inbound(fmt.Sprintf("in-%04d", i), at(time.Duration(i%7)*time.Millisecond))
		}
		h.addInbound(evs...)
		seen := drainConcurrently(t, "ClaimInbound", func() ([]string, error) {
			got, err := h.s.ClaimInbound(h.ctx, at(time.Second), 7, at(time.Hour))
			ids := make([]string, len(got))
			for i, ev := range got {
				ids[i] = ev.ID
			}
			return ids, err
		})
		for id, k := range seen {
			if k > 1 {
				t.Errorf("event %s claimed %d times", id, k)
			}
		}
		if len(seen) != n {
			t.Errorf("claimed %d distinct events, want %d", len(seen), n)
		}
	})
}

// drainConcurrently calls take from 8 goroutines at once, each until take
// returns nothing, and counts how many times each id came back.
func drainConcurrently(t *testing.T, name string, take func() ([]string, error)) map[string]int {
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		wg   sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for {
				ids, err := take()
				if err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
				if len(ids) == 0 {
					return
				}
				mu.Lock()
				for _, id := range ids {
					seen[id]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return seen
}

// inbound returns a transmitted event of route r1 with id, received and
// due at due.
func inbound(id string, due time.Time) herald.Inbound {
	return herald.Inbound{ID: id, Route: "r1", Kind: herald.InboundTransmitted, ExternalID: "q-" + id, Device: "dev-1", At: due, DueAt: due}
}

// addInbound stores evs and fails on error.
func (h *harness) addInbound(evs ...herald.Inbound) {
	h.t.Helper()
	for _, ev := range evs {
		if err := h.s.AddInbound(h.ctx, ev); err != nil {
			h.t.Fatalf("AddInbound %s: %v", ev.ID, err)
		}
	}
}

// claimInbound claims inbox events and fails on error.
func (h *harness) claimInbound(now time.Time, limit int, leaseUntil time.Time) []herald.Inbound {
	h.t.Helper()
	evs, err := h.s.ClaimInbound(h.ctx, now, limit, leaseUntil)
	if err != nil {
		h.t.Fatalf("ClaimInbound: %v", err)
	}
	return evs
}

// byCorrelation returns the inbox events of route and correlation and
// fails on error.
func (h *harness) byCorrelation(route, correlation string) []herald.Inbound {
	h.t.Helper()
	evs, err := h.s.InboundByCorrelation(h.ctx, route, correlation)
	if err != nil {
		h.t.Fatalf("InboundByCorrelation %s/%q: %v", route, correlation, err)
	}
	return evs
}

// settleInbound applies s and fails on error.
func (h *harness) settleInbound(s herald.InboundSettle) {
	h.t.Helper()
	if err := h.s.SettleInbound(h.ctx, s); err != nil {
		h.t.Fatalf("SettleInbound: %v", err)
	}
}

// inboundIDs returns the ids of evs, in order.
func inboundIDs(evs []herald.Inbound) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

// diffInbound lists the fields in which got differs from want.
func diffInbound(got, want herald.Inbound) []string {
	var diffs []string
	check := func(field string, equal bool, g, w any) {
		if !equal {
			diffs = append(diffs, fmt.Sprintf("%s = %v, want %v", field, g, w))
		}
	}
	check("ID", got.ID == want.ID, got.ID, want.ID)
	check("Route", got.Route == want.Route, got.Route, want.Route)
	check("Kind", got.Kind == want.Kind, got.Kind, want.Kind)
	check("ExternalID", got.ExternalID == want.ExternalID, got.ExternalID, want.ExternalID)
	check("Correlation", got.Correlation == want.Correlation, got.Correlation, want.Correlation)
	check("Acknowledged", got.Acknowledged == want.Acknowledged, got.Acknowledged, want.Acknowledged)
	check("Permanent", got.Permanent == want.Permanent, got.Permanent, want.Permanent)
	check("Reason", got.Reason == want.Reason, got.Reason, want.Reason)
	check("Device", got.Device == want.Device, got.Device, want.Device)
	check("Uplink", string(got.Uplink) == string(want.Uplink), string(got.Uplink), string(want.Uplink))
	check("At", sameTime(got.At, want.At), got.At, want.At)
	check("DueAt", sameTime(got.DueAt, want.DueAt), got.DueAt, want.DueAt)
	return diffs
}
