package lxmf

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	simr "github.com/heraldmq/herald/sim/reticulum"
)

var lxmfHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// TestDeliveredByEveryMethod: direct (a packet, and a 3,000-byte message
// as a resource), opportunistic and propagated messages reach the
// simulated network's recipient (or its propagation node), each once;
// the message goes through every stage, each with its time, and ends
// with the LXMF hash as its external id and the method in its result.
func TestDeliveredByEveryMethod(t *testing.T) {
	onStores(t, func(t *testing.T, open func(*testing.T) herald.Store) {
		var alice *simr.Peer
		var pn *simr.PropagationNode
		r := newRig(t, open, func(s *simr.Sim) []route {
			alice, _ = s.AddPeer(simr.PeerConfig{Name: "alice"})
			pn, _ = s.AddPropagationNode(simr.PropagationNodeConfig{Name: "pn", StampCost: 4})
			return []route{{name: "direct", method: Direct}, {name: "opp", method: Opportunistic}, {name: "pn", method: Propagated, pn: pn.Address()}}
		})
		to := alice.Address().String()
		cases := []struct {
			route, text, method, repr, how string
		}{
			{"direct", "hello direct", "direct", "packet", "proved by the recipient"},
			{"direct", strings.Repeat("3", 3000), "direct", "resource", "proved by the recipient"},
			{"opp", "hello opportunistic", "opportunistic", "packet", "proved by the recipient"},
			{"pn", "hello propagated", "propagated", "packet", "accepted by the propagation node"},
		}
		for _, c := range cases {
			m := r.send(c.route, to, c.text, map[string]string{ParamTitle: "t"})
			r.settle()
			if got := r.get(m.ID); got.Status == herald.StatusToRetry { // the path asked for: herald did not hear the recipient announce
				r.advance(PathRequestWait)
			}
			got := r.waitStatus(m.ID, herald.StatusDeliverySuccessful)
			if !lxmfHash.MatchString(got.ExternalID) || got.Result["method"] != c.method || got.Result["representation"] != c.repr {
				t.Errorf("%s %.12s: external id %q, result %v", c.route, c.text, got.ExternalID, got.Result)
			}
			if last := got.Timeline[len(got.Timeline)-1]; last.From != herald.StatusDeliveredToNS || last.Reason != c.how {
				t.Errorf("%s: last step %s -> %s %q, want DELIVERED_TO_NS -> DELIVERY_SUCCESSFUL %q", c.route, last.From, last.To, last.Reason, c.how)
			}
		}
		got := alice.Received()
		if len(got) != 3 || got[0].Title != "t" || got[1].Size != 3000 || got[2].Method != "opportunistic" || alice.Repeats() != 0 {
			t.Fatalf("alice received %+v (%d repeats)", got, alice.Repeats())
		}
		if ups := pn.Uploads(); len(ups) != 1 || ups[0].Destination != to {
			t.Fatalf("the propagation node took %+v", ups)
		}
	})
}

// TestTimelineOfADirectMessage: once herald knows the recipient's path,
// a direct message's timeline has every stage, in order, each at its
// time, from the attempt's claim to the recipient's proof.
func TestTimelineOfADirectMessage(t *testing.T) {
	var alice *simr.Peer
	r := newRig(t, stores[0].open, func(s *simr.Sim) []route {
		alice, _ = s.AddPeer(simr.PeerConfig{Name: "alice"})
		return []route{{name: "direct", method: Direct}}
	})
	r.ep.requestPath(alice.Address(), r.clock.Now())
	r.eventually("the path to alice", func() bool { return r.ep.node.HasPath(alice.Address()) })
	m := r.send("direct", alice.Address().String(), "stages", nil)
	got := r.waitStatus(m.ID, herald.StatusDeliverySuccessful)
	want := []struct {
		to     herald.Status
		reason string
	}{{herald.StatusQueued, "created"}, {herald.StatusSentToNS, ""}, {herald.StatusDeliveredToNS, "accepted by carrier"},
		{herald.StatusDeliverySuccessful, "proved by the recipient"}}
	if len(got.Timeline) != len(want) {
		t.Fatalf("timeline %v, want %d entries", reasons(got), len(want))
	}
	for i, w := range want {
		e := got.Timeline[i]
		if e.To != w.to || (w.reason != "" && e.Reason != w.reason) || e.At.IsZero() || e.Attempt != min(i, 1) {
			t.Errorf("timeline[%d] = %s %q at %v attempt %d, want %s %q", i, e.To, e.Reason, e.At, e.Attempt, w.to, w.reason)
		}
		if i > 0 && e.At.Before(got.Timeline[i-1].At) {
			t.Errorf("timeline[%d] at %v, before the step before it", i, e.At)
		}
	}
	v := got.View()
	if len(v.Timeline) != 4 || v.Result["method"] != "direct" || v.ExternalID != got.ExternalID {
		t.Errorf("view %+v", v)
	}
}

// TestUnknownRecipientFailsAfterFiveAttempts: for a recipient no one has
// heard of, each direct attempt finds no path, asks for one and waits
// 7 s (path_requested), as the reference's outbound loop does; the fifth
// such attempt ends the message DELIVERY_FAILED, 28 s after the first.
func TestUnknownRecipientFailsAfterFiveAttempts(t *testing.T) {
	onStores(t, func(t *testing.T, open func(*testing.T) herald.Store) {
		r := newRig(t, open, func(*simr.Sim) []route { return []route{{name: "direct", method: Direct}} })
		before := r.sim.Stats().PathRequests
		m := r.send("direct", strings.Repeat("ab", 16), "anyone?", nil)
		r.settle()
		for a := 1; a < 5; a++ {
			got := r.get(m.ID)
			if got.Status != herald.StatusToRetry || got.Attempt != a || got.DueAt.Sub(r.clock.Now()) != PathRequestWait {
				t.Fatalf("attempt %d: %s at attempt %d, due in %v; want TO_RETRY, due in 7s", a, got.Status, got.Attempt, got.DueAt.Sub(r.clock.Now()))
			}
			if x := r.explain(m.ID); x.Reason != "path_requested" {
				t.Fatalf("explain after attempt %d: %+v", a, x)
			}
			r.advance(PathRequestWait)
		}
		got := r.waitStatus(m.ID, herald.StatusDeliveryFailed)
		if got.Attempt != 5 || got.UpdatedAt.Sub(t0) != 4*PathRequestWait {
			t.Fatalf("failed at attempt %d after %v, want 5 after 28s", got.Attempt, got.UpdatedAt.Sub(t0))
		}
		if !strings.Contains(got.LastError, "no path to the recipient") || got.Timeline[len(got.Timeline)-1].Reason != "path_requested; 5 of 5 attempts used" {
			t.Errorf("last error %q, timeline %v", got.LastError, reasons(got))
		}
		r.eventually("five path requests at the transport node", func() bool { return r.sim.Stats().PathRequests-before == 5 })
	})
}

// TestLateRecipientIsDeliveredAfterPathRequests: a recipient that comes
// online and announces 20 s after the message was sent gets it at the
// next attempt after its announce: attempts 1 to 3 asked for its path.
func TestLateRecipientIsDeliveredAfterPathRequests(t *testing.T) {
	onStores(t, func(t *testing.T, open func(*testing.T) herald.Store) {
		var carol *simr.Peer
		r := newRig(t, open, func(s *simr.Sim) []route {
			carol, _ = s.AddPeer(simr.PeerConfig{Name: "carol", Offline: true})
			return []route{{name: "direct", method: Direct}}
		})
		m := r.send("direct", carol.Address().String(), "you're late", nil)
		r.settle()
		for r.clock.Now().Sub(t0) < 20*time.Second {
			r.advance(time.Second)
		}
		if got := r.get(m.ID); got.Status != herald.StatusToRetry || got.Attempt != 3 {
			t.Fatalf("after 20 s: %s at attempt %d, want TO_RETRY after 3 path requests", got.Status, got.Attempt)
		}
		if err := carol.Online(); err != nil {
			t.Fatal(err)
		}
		r.eventually("carol's announce at herald", func() bool { return r.ep.node.HasPath(carol.Address()) })
		r.advance(time.Second) // attempt 4 at 21 s
		got := r.waitStatus(m.ID, herald.StatusDeliverySuccessful)
		if got.Attempt != 4 || len(carol.Received()) != 1 {
			t.Fatalf("delivered at attempt %d; carol received %d", got.Attempt, len(carol.Received()))
		}
	})
}

// TestWaitForPathWaitsWithoutSpendingAttempts: with wait_for_path 2m a
// message for a recipient not reachable yet waits for its path, asking
// every 7 s, with no attempt spent and its lane paused (explain:
// path_requested); the recipient announces 60 s later and gets it at
// attempt 1. Cancelling such a message while it waits ends it.
func TestWaitForPathWaitsWithoutSpendingAttempts(t *testing.T) {
	onStores(t, func(t *testing.T, open func(*testing.T) herald.Store) {
		var dave *simr.Peer
		r := newRig(t, open, func(s *simr.Sim) []route {
			dave, _ = s.AddPeer(simr.PeerConfig{Name: "dave", Offline: true})
			return []route{{name: "patient", method: Direct, wait: 2 * time.Minute}}
		})
		m := r.send("patient", dave.Address().String(), "whenever you are ready", nil)
		second := r.send("patient", dave.Address().String(), "and this one", nil)
		r.settle()
		for r.clock.Now().Sub(t0) < 60*time.Second {
			r.advance(time.Second)
			if got := r.get(m.ID); got.Attempt != 0 || got.Status.Terminal() {
				t.Fatalf("at %v: %s at attempt %d, want waiting with no attempt spent", r.clock.Now().Sub(t0), got.Status, got.Attempt)
			}
		}
		for _, id := range []string{m.ID, second.ID} {
			if x := r.explain(id); x.Reason != "path_requested" {
				t.Errorf("explain %s: %+v", id, x)
			}
		}
		if err := dave.Online(); err != nil {
			t.Fatal(err)
		}
		r.eventually("dave's announce at herald", func() bool { return r.ep.node.HasPath(dave.Address()) })
		for i := 0; i < 8 && r.get(second.ID).Status != herald.StatusDeliverySuccessful; i++ {
			r.advance(time.Second)
			time.Sleep(20 * time.Millisecond)
		}
		for _, id := range []string{m.ID, second.ID} {
			if got := r.waitStatus(id, herald.StatusDeliverySuccessful); got.Attempt != 1 {
				t.Errorf("%s delivered at attempt %d, want 1", id, got.Attempt)
			}
		}
		if n := len(dave.Received()); n != 2 {
			t.Errorf("dave received %d, want 2", n)
		}

		waiting := r.send("patient", strings.Repeat("cd", 16), "to no one", nil)
		r.settle()
		if got := r.get(waiting.ID); got.Status != herald.StatusToRetry {
			t.Fatalf("waiting: %s", got.Status)
		}
		if _, err := r.eng.Cancel(t.Context(), "acme", waiting.ID); err != nil {
			t.Fatal(err)
		}
		if got := r.get(waiting.ID); got.Status != herald.StatusCancelled || got.Attempt != 0 {
			t.Fatalf("cancelled: %s at attempt %d", got.Status, got.Attempt)
		}
	})
}

// TestWaitForPathEndsAtItsBound: once a message is older than
// wait_for_path, its path requests count as attempts again, and it fails
// after its five.
func TestWaitForPathEndsAtItsBound(t *testing.T) {
	r := newRig(t, stores[0].open, func(*simr.Sim) []route { return []route{{name: "patient", method: Direct, wait: 2 * time.Minute}} })
	m := r.send("patient", strings.Repeat("ef", 16), "to no one", nil)
	r.settle()
	for r.clock.Now().Sub(t0) < 2*time.Minute {
		r.advance(PathRequestWait)
	}
	if got := r.get(m.ID); got.Attempt > 1 || got.Status.Terminal() {
		t.Fatalf("at the bound: %s at attempt %d", got.Status, got.Attempt)
	}
	for i := 0; i < 6; i++ {
		r.advance(PathRequestWait)
	}
	if got := r.waitStatus(m.ID, herald.StatusDeliveryFailed); got.Attempt != 5 {
		t.Fatalf("failed at attempt %d, want 5", got.Attempt)
	}
}

// TestRejectionIsPermanent: a recipient that declines the message's
// resource, and a propagation node that refuses its stamp, fail it at
// once, with the reason kept.
func TestRejectionIsPermanent(t *testing.T) {
	onStores(t, func(t *testing.T, open func(*testing.T) herald.Store) {
		var bob *simr.Peer
		var strict *simr.PropagationNode
		r := newRig(t, open, func(s *simr.Sim) []route {
			bob, _ = s.AddPeer(simr.PeerConfig{Name: "bob", Reject: true})
			strict, _ = s.AddPropagationNode(simr.PropagationNodeConfig{Name: "strict", StampCost: 4, Reject: true})
			return []route{{name: "direct", method: Direct}, {name: "pn", method: Propagated, pn: strict.Address()}}
		})
		r.ep.requestPath(bob.Address(), r.clock.Now())
		r.ep.requestPath(strict.Address(), r.clock.Now())
		r.eventually("paths", func() bool { return r.ep.node.HasPath(bob.Address()) && r.ep.node.HasPath(strict.Address()) })
		for _, c := range []struct{ route, text, why string }{
			{"direct", strings.Repeat("x", 3000), "declined the resource"},
			{"pn", "stamped", "rejected the stamp"},
		} {
			m := r.send(c.route, bob.Address().String(), c.text, nil)
			got := r.waitStatus(m.ID, herald.StatusDeliveryFailed)
			if got.Attempt != 1 || !strings.Contains(got.LastError, c.why) || !strings.HasPrefix(got.Timeline[len(got.Timeline)-1].Reason, "permanent error") {
				t.Errorf("%s: attempt %d, last error %q, timeline %v", c.route, got.Attempt, got.LastError, reasons(got))
			}
		}
	})
}

// TestLateProofIsAdoptedOnce: a recipient whose proofs come back slowly
// proves attempt 1 after herald gave up waiting for it (the message then
// waits for attempt 2): the proof is adopted, the message ends delivered
// at attempt 1, once, and nothing is sent again.
func TestLateProofIsAdoptedOnce(t *testing.T) {
	onStores(t, func(t *testing.T, open func(*testing.T) herald.Store) {
		var slow *simr.Peer
		r := newRig(t, open, func(s *simr.Sim) []route {
			slow, _ = s.AddPeer(simr.PeerConfig{Name: "slow", Latency: 500 * time.Millisecond})
			return []route{{name: "opp", method: Opportunistic}}
		})
		r.ep.requestPath(slow.Address(), r.clock.Now())
		r.eventually("the path to slow", func() bool { return r.ep.node.HasPath(slow.Address()) })
		m := r.send("opp", slow.Address().String(), "take your time", nil)
		got := r.waitStatus(m.ID, herald.StatusDeliveredToNS)
		r.advance(got.Deadline.Sub(r.clock.Now())) // herald stops waiting for the proof
		if got := r.get(m.ID); got.Status != herald.StatusToRetry && got.Status != herald.StatusDeliverySuccessful {
			t.Fatalf("after the stage timeout: %s", got.Status)
		}
		got = r.waitStatus(m.ID, herald.StatusDeliverySuccessful)
		if got.Attempt != 1 || !strings.Contains(got.Timeline[len(got.Timeline)-1].Reason, "late answer of attempt 1 adopted") {
			t.Errorf("delivered at attempt %d: %v", got.Attempt, reasons(got))
		}
		r.advance(time.Minute)
		if n, rep := len(slow.Received()), slow.Repeats(); n != 1 || rep != 0 {
			t.Errorf("slow received %d (%d repeats), want once", n, rep)
		}
		if n := len(r.sink.ofType(herald.StatusDeliverySuccessful)); n != 1 {
			t.Errorf("%d DELIVERY_SUCCESSFUL events, want 1", n)
		}
	})
}

// TestMessagesToHeraldGoToSubscribers: an LXMF message a recipient sends
// to herald's address reaches the subscribers as an lxmf.message event,
// by either method.
func TestMessagesToHeraldGoToSubscribers(t *testing.T) {
	onStores(t, func(t *testing.T, open func(*testing.T) herald.Store) {
		var erin *simr.Peer
		r := newRig(t, open, func(s *simr.Sim) []route {
			erin, _ = s.AddPeer(simr.PeerConfig{Name: "erin"})
			return []route{{name: "direct", method: Direct}}
		})
		r.ep.requestPath(erin.Address(), r.clock.Now()) // its announce: the key its signatures are checked with
		r.eventually("the path to erin", func() bool { return r.ep.node.HasPath(erin.Address()) })
		for _, method := range []int{1, 2} {
			if err := erin.Send(t.Context(), r.ep.Address(), "status", "all good", method); err != nil {
				t.Fatal(err)
			}
		}
		r.eventually("two lxmf.message events", func() bool {
			r.clock.Advance(time.Millisecond)
			return len(r.sink.ofType(herald.EventLXMFMessage)) == 2
		})
		for _, e := range r.sink.ofType(herald.EventLXMFMessage) {
			s := string(e.LXMF)
			for _, want := range []string{`"source":"` + erin.Address().String() + `"`, `"title":"status"`, `"content":"all good"`, `"signature_valid":true`} {
				if !strings.Contains(s, want) {
					t.Errorf("event %s lacks %s", s, want)
				}
			}
		}
	})
}

// TestFallbackRouteTakesTheLastAttempt: a direct route whose fallback is
// a propagated route makes a message's last attempt through the
// propagation node: a recipient whose path is gone (it went offline; the
// transport node forgot it) gets it propagated at attempt 5, with
// result.method propagated. Without the fallback it would have failed.
func TestFallbackRouteTakesTheLastAttempt(t *testing.T) {
	var gone *simr.Peer
	var pn *simr.PropagationNode
	r := newRig(t, stores[0].open, func(s *simr.Sim) []route {
		gone, _ = s.AddPeer(simr.PeerConfig{Name: "gone"})
		pn, _ = s.AddPropagationNode(simr.PropagationNodeConfig{Name: "pn", StampCost: 4})
		return []route{{name: "mesh", method: Direct, fallback: "mesh-pn"}, {name: "mesh-pn", method: Propagated, pn: pn.Address()}}
	})
	r.ep.requestPath(gone.Address(), r.clock.Now()) // herald learns its identity
	r.eventually("the path to gone", func() bool { return r.ep.node.HasPath(gone.Address()) && r.ep.node.HasPath(pn.Address()) })
	gone.Offline()
	r.sim.ForgetPath(gone.Address())
	r.ep.node.Store().DropPath(gone.Address())
	m := r.send("mesh", gone.Address().String(), "keep it for me", nil)
	r.settle()
	for a := 1; a < 5; a++ {
		if got := r.get(m.ID); got.Status != herald.StatusToRetry || got.Attempt != a {
			t.Fatalf("attempt %d: %s at attempt %d", a, got.Status, got.Attempt)
		}
		r.advance(PathRequestWait)
	}
	got := r.waitStatus(m.ID, herald.StatusDeliverySuccessful)
	if got.Attempt != 5 || got.Result["method"] != "propagated" {
		t.Fatalf("delivered at attempt %d with result %v", got.Attempt, got.Result)
	}
	if ups := pn.Uploads(); len(ups) != 1 || ups[0].Destination != gone.Address().String() {
		t.Fatalf("the propagation node took %+v", ups)
	}
}

// TestOpportunisticFollowsTheReferenceLoop: to a recipient that went
// silent (its path still known), an opportunistic message is sent,
// awaits its proof for as long as its receipt lives, waits 10 s and is
// sent again; its third attempt drops the path that did not deliver and
// asks for it again (7 s); the fourth and fifth are sent along the path
// found again, and the message fails after the fifth's proof wait.
func TestOpportunisticFollowsTheReferenceLoop(t *testing.T) {
	var ivy *simr.Peer
	r := newRig(t, stores[0].open, func(s *simr.Sim) []route {
		ivy, _ = s.AddPeer(simr.PeerConfig{Name: "ivy"})
		return []route{{name: "opp", method: Opportunistic}}
	})
	r.ep.requestPath(ivy.Address(), r.clock.Now())
	r.eventually("the path to ivy", func() bool { return r.ep.node.HasPath(ivy.Address()) })
	ivy.Offline()
	m := r.send("opp", ivy.Address().String(), "hello?", nil)
	proofWait := func(a int) {
		t.Helper()
		got := r.waitStatus(m.ID, herald.StatusDeliveredToNS)
		if got.Attempt != a || got.Deadline.Sub(r.clock.Now()) < 10*time.Second {
			t.Fatalf("attempt %d: DELIVERED_TO_NS at attempt %d until %v", a, got.Attempt, got.Deadline.Sub(r.clock.Now()))
		}
		r.advance(got.Deadline.Sub(r.clock.Now()))
		if got := r.get(m.ID); a < 5 && (got.Status != herald.StatusToRetry || got.DueAt.Sub(r.clock.Now()) != 10*time.Second) {
			t.Fatalf("attempt %d unproved: %s, due in %v; want TO_RETRY in 10s", a, got.Status, got.DueAt.Sub(r.clock.Now()))
		}
	}
	proofWait(1)
	r.advance(10 * time.Second)
	proofWait(2)
	r.advance(10 * time.Second)
	got := r.get(m.ID)
	if got.Attempt != 3 || got.Status != herald.StatusToRetry || !strings.Contains(got.LastError, "path dropped") || r.explain(m.ID).Reason != "path_requested" {
		t.Fatalf("attempt 3: %s at %d, last error %q", got.Status, got.Attempt, got.LastError)
	}
	r.eventually("the path found again", func() bool { return r.ep.node.HasPath(ivy.Address()) })
	r.advance(PathRequestWait)
	proofWait(4)
	r.advance(10 * time.Second)
	proofWait(5)
	if got := r.waitStatus(m.ID, herald.StatusDeliveryFailed); got.Attempt != 5 {
		t.Fatalf("failed at attempt %d", got.Attempt)
	}
}

// TestOpportunisticFirstTryGoesWithoutAPath: a recipient whose identity
// herald knows but whose path it has not gets the first attempt sent
// without one (on every interface, the reference's pathless try); the
// second asks for the path.
func TestOpportunisticFirstTryGoesWithoutAPath(t *testing.T) {
	var jay *simr.Peer
	r := newRig(t, stores[0].open, func(s *simr.Sim) []route {
		jay, _ = s.AddPeer(simr.PeerConfig{Name: "jay"})
		return []route{{name: "opp", method: Opportunistic}}
	})
	r.ep.requestPath(jay.Address(), r.clock.Now())
	r.eventually("the path to jay", func() bool { return r.ep.node.HasPath(jay.Address()) })
	jay.Offline()
	r.sim.ForgetPath(jay.Address())
	r.ep.node.Store().DropPath(jay.Address())
	m := r.send("opp", jay.Address().String(), "anyone?", nil)
	got := r.waitStatus(m.ID, herald.StatusDeliveredToNS)
	if got.Attempt != 1 || got.Result["method"] != "opportunistic" {
		t.Fatalf("attempt 1: %+v", got)
	}
	r.advance(got.Deadline.Sub(r.clock.Now()))
	r.advance(10 * time.Second)
	got = r.get(m.ID)
	if got.Attempt != 2 || got.Status != herald.StatusToRetry || !strings.Contains(got.LastError, "no path") {
		t.Fatalf("attempt 2: %s at %d, %q", got.Status, got.Attempt, got.LastError)
	}
}
