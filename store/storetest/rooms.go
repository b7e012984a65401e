package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

func testRooms(t *testing.T, open opener) {
	t.Run("Rooms", func(t *testing.T) {
		h := open(t)
		b := h.room("acme", "b", 0)
		a := herald.Room{Tenant: "acme", Name: "a", Expiration: 90 * time.Second, CreatedAt: at(time.Second), Revision: 1 << 61,
			Delivery: herald.DeliveryPolicy{Delay: 1500 * time.Millisecond, Multiplier: 2.5, Attempts: 7}}
		h.createRoom(a)
		h.room("other", "a", 0)
		if err := h.s.CreateRoom(h.ctx, herald.Room{Tenant: "acme", Name: "a", Revision: 5}); !errors.Is(err, herald.ErrRoomExists) {
			t.Errorf("CreateRoom of a name taken: %v, want ErrRoomExists", err)
		}
		checkRoom(t, "Room a", h.getRoom("acme", "a"), a)
		rooms, err := h.s.Rooms(h.ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if len(rooms) != 2 {
			t.Fatalf("Rooms: %d rooms, want 2", len(rooms))
		}
		checkRoom(t, "Rooms[0]", &rooms[0], a)
		checkRoom(t, "Rooms[1]", &rooms[1], b)
		if _, err := h.s.Room(h.ctx, "acme", "c"); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("Room of an unknown name: %v, want ErrNotFound", err)
		}
		if _, err := h.s.Room(h.ctx, "nobody", "a"); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("Room of another tenant: %v, want ErrNotFound", err)
		}
	})

	t.Run("Subscriptions", func(t *testing.T) {
		h := open(t)
		h.room("acme", "r", 0)
		delay, mult, att := 2*time.Second, 3.0, 0
		full := herald.Subscription{ID: nextID(), Tenant: "acme", Room: "r", Type: herald.SubscriptionPush,
			URL: "https://example.com/in?x=1", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", CreatedAt: at(time.Second),
			EventTypes: []herald.EventType{{Type: "order.created", Version: "2"}, {Type: "order | paid"}},
			Delivery:   herald.DeliveryOverrides{Delay: &delay, Multiplier: &mult, Attempts: &att}}
		bare := herald.Subscription{ID: nextID(), Tenant: "acme", Room: "r", Type: herald.SubscriptionPull, CreatedAt: at(2 * time.Second)}
		if err := h.s.CreateSubscription(h.ctx, herald.Subscription{ID: nextID(), Tenant: "acme", Room: "nope", Type: herald.SubscriptionPull}); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("CreateSubscription in an unknown room: %v, want ErrNotFound", err)
		}
		if err := h.s.CreateSubscription(h.ctx, herald.Subscription{ID: nextID(), Tenant: "other", Room: "r", Type: herald.SubscriptionPull}); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("CreateSubscription in another tenant's room: %v, want ErrNotFound", err)
		}
		h.subscribe(full)
		h.subscribe(bare)
		if rev := h.getRoom("acme", "r").Revision; rev != 3 {
			t.Errorf("revision after two subscriptions: %d, want 3", rev)
		}
		h.room("acme", "empty", 0)
		if n := h.getRoom("acme", "r").Subscriptions; n != 2 {
			t.Errorf("Room counts %d subscriptions, want 2", n)
		}
		if rooms, err := h.s.Rooms(h.ctx, "acme"); err != nil || len(rooms) != 2 || rooms[0].Subscriptions != 0 || rooms[1].Subscriptions != 2 {
			t.Errorf("Rooms = %+v, %v; want empty with 0 subscriptions and r with 2", rooms, err)
		}
		checkSubscription(t, "Subscription full", h.getSubscription(full.ID), full)
		checkSubscription(t, "Subscription bare", h.getSubscription(bare.ID), bare)
		subs, err := h.s.Subscriptions(h.ctx, "acme", "r")
		if err != nil {
			t.Fatal(err)
		}
		if len(subs) != 2 {
			t.Fatalf("Subscriptions: %d, want 2", len(subs))
		}
		checkSubscription(t, "Subscriptions[0]", &subs[0], full)
		checkSubscription(t, "Subscriptions[1]", &subs[1], bare)
		if _, err := h.s.Subscription(h.ctx, "nope"); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("Subscription unknown: %v, want ErrNotFound", err)
		}
		end := herald.DeliveryEnd{At: t0, Reason: "subscription deleted"}
		if _, err := h.s.DeleteSubscription(h.ctx, "other", full.ID, end); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("DeleteSubscription by another tenant: %v, want ErrNotFound", err)
		}
		if _, err := h.s.DeleteSubscription(h.ctx, "acme", full.ID, end); err != nil {
			t.Fatalf("DeleteSubscription: %v", err)
		}
		if _, err := h.s.Subscription(h.ctx, full.ID); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("Subscription deleted: %v, want ErrNotFound", err)
		}
		if r := h.getRoom("acme", "r"); r.Revision != 4 || r.Subscriptions != 1 {
			t.Errorf("revision after a deletion: %d, subscriptions %d; want 4 and 1", r.Revision, r.Subscriptions)
		}
		if _, err := h.s.DeleteRoom(h.ctx, "acme", "nope", end); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("DeleteRoom unknown: %v, want ErrNotFound", err)
		}
		if _, err := h.s.DeleteRoom(h.ctx, "acme", "r", end); err != nil {
			t.Fatalf("DeleteRoom: %v", err)
		}
		if _, err := h.s.Subscription(h.ctx, bare.ID); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("Subscription of a deleted room: %v, want ErrNotFound", err)
		}
		if rooms, _ := h.s.Rooms(h.ctx, "acme"); len(rooms) != 1 || rooms[0].Name != "empty" {
			t.Errorf("Rooms after the deletion: %+v, want the empty one", rooms)
		}
		h.room("acme", "r", 0) // the name is free again
		if subs, _ := h.s.Subscriptions(h.ctx, "acme", "r"); len(subs) != 0 {
			t.Errorf("the new room has %d subscriptions, want none", len(subs))
		}
	})

	t.Run("Publish", func(t *testing.T) {
		h := open(t)
		h.room("acme", "r", 0)
		push, pull := h.sub("r", herald.SubscriptionPush), h.sub("r", herald.SubscriptionPull)
		room := h.getRoom("acme", "r")
		p := publication(room, []byte(`{"n":1}`), push, pull)
		stale := p
		stale.Revision--
		if err := h.s.Publish(h.ctx, stale); !errors.Is(err, herald.ErrConflict) {
			t.Fatalf("Publish at an old revision: %v, want ErrConflict", err)
		}
		if _, err := h.s.RoomEvent(h.ctx, p.Event.ID); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("the refused publication's event: %v, want ErrNotFound", err)
		}
		for _, m := range p.Deliveries {
			if _, err := h.s.Get(h.ctx, m.ID); !errors.Is(err, herald.ErrNotFound) {
				t.Errorf("the refused publication's delivery %s: %v, want ErrNotFound", m.ID, err)
			}
		}
		gone := publication(&herald.Room{Tenant: "acme", Name: "gone", Revision: 1}, nil, push)
		if err := h.s.Publish(h.ctx, gone); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("Publish to an unknown room: %v, want ErrNotFound", err)
		}

		h.publish(p)
		ev, err := h.s.RoomEvent(h.ctx, p.Event.ID)
		if err != nil {
			t.Fatal(err)
		}
		checkRoomEvent(t, ev, &p.Event)
		for _, want := range p.Deliveries {
			got := h.get(want.ID)
			stored := herald.AsCreated(want)
			if d := diffMessage(got, &stored); len(d) > 0 {
				t.Errorf("delivery %s: %v", want.ID, d)
			}
			if got.Pull != want.Pull || got.Backoff != want.Backoff {
				t.Errorf("delivery %s: Pull %v Backoff %+v, want %v %+v", want.ID, got.Pull, got.Backoff, want.Pull, want.Backoff)
			}
		}
		claimed := h.claim(at(time.Minute), 10)
		if ids := ids(claimed); !slices.Equal(ids, []string{p.Deliveries[0].ID}) {
			t.Errorf("Claim: %v, want the push delivery only", ids)
		}
		pulled := h.pull(pullOf(pull, at(time.Minute), 10))
		if ids := ids(pulled); !slices.Equal(ids, []string{p.Deliveries[1].ID}) {
			t.Errorf("Pull: %v, want the pull delivery", ids)
		}
		routes, err := h.s.ActiveRoutes(h.ctx)
		if err != nil || !slices.Equal(routes, []string{herald.RoomRoutePrefix + "r"}) {
			t.Errorf("ActiveRoutes: %v %v, want the room's", routes, err)
		}
	})

	t.Run("KeptByCreate", func(t *testing.T) {
		h := open(t)
		m := newMessage("r1")
		m.Pull, m.Backoff = true, herald.Backoff{Delay: 1234 * time.Millisecond, Multiplier: 1.5}
		h.create(m)
		if got := h.get(m.ID); !got.Pull || got.Backoff != m.Backoff {
			t.Errorf("after Create: Pull %v Backoff %+v, want true %+v", got.Pull, got.Backoff, m.Backoff)
		}
		if got := h.claim(at(time.Minute), 10); len(got) != 0 {
			t.Errorf("Claim took a pull message: %v", ids(got))
		}
		got := h.pull(herald.PullClaim{Route: "r1", Target: m.Target, Now: at(time.Minute), Limit: 10, Deadline: at(2 * time.Minute), Lease: pullLease()})
		if len(got) != 1 || got[0].ID != m.ID || !got[0].Pull || got[0].Backoff != m.Backoff {
			t.Errorf("Pull: %v, want %s with its Pull and Backoff", got, m.ID)
		}
	})

	t.Run("Pull", func(t *testing.T) {
		h := open(t)
		q := func(target string, prio int, due, expires time.Time) *herald.Message {
			m := newMessage("room:r")
			m.Target, m.Priority, m.DueAt, m.ExpiresAt, m.Pull = target, prio, due, expires, true
			return h.create(m)
		}
		var zero time.Time
		now := at(time.Minute)
		low1 := q("s1", 0, t0, zero)
		high := q("s1", 5, t0, zero)
		low2 := q("s1", 0, t0, at(time.Hour))
		q("s1", 9, at(2*time.Minute), zero) // not due
		q("s1", 9, t0, now)                 // expired at now
		q("s2", 9, t0, zero)                // another target
		push := newMessage("room:r")        // not a pull message
		push.Target = "s1"
		h.create(push)

		queue := func(what, target string, want int) {
			t.Helper()
			if n, err := h.s.PullQueue(h.ctx, "room:r", target); err != nil || n != want {
				t.Errorf("PullQueue of %s %s = %d, %v; want %d", target, what, n, err, want)
			}
		}
		queue("at first", "s1", 5) // due or not, expired or not; not the push message
		queue("at first", "s2", 1)
		queue("at first", "s3", 0)
		if got := h.pull(herald.PullClaim{Route: "room:r", Target: "s1", Now: now, Limit: 0, Deadline: at(time.Hour), Lease: pullLease()}); len(got) != 0 {
			t.Errorf("Pull of 0: %v", ids(got))
		}
		lease := pullLease()
		first := h.pull(herald.PullClaim{Route: "room:r", Target: "s1", Now: now, Limit: 2, Deadline: at(90 * time.Second), Lease: lease, Reason: "leased"})
		if want := []string{high.ID, low1.ID}; !slices.Equal(ids(first), want) {
			t.Fatalf("Pull of 2: %v, want %v (priority, then first in)", ids(first), want)
		}
		for _, m := range first {
			if m.Status != herald.StatusSentToNS || m.Attempt != 1 || m.Lease != lease || !sameTime(m.Deadline, at(90*time.Second)) || !sameTime(m.UpdatedAt, now) {
				t.Errorf("pulled %s: %s attempt %d lease %d deadline %v, want SENT_TO_NS 1 under lease %d until +90s", m.ID, m.Status, m.Attempt, m.Lease, m.Deadline, lease)
			}
			stored := h.get(m.ID)
			if stored.Lease != m.Lease || stored.Status != herald.StatusSentToNS {
				t.Errorf("stored %s: %s lease %d, want what Pull returned", m.ID, stored.Status, stored.Lease)
			}
			checkEntry(t, "pulled", lastEntry(t, stored), herald.TimelineEntry{At: now, From: herald.StatusQueued, To: herald.StatusSentToNS, Attempt: 1, Reason: "leased"})
		}
		rest := h.pull(herald.PullClaim{Route: "room:r", Target: "s1", Now: now, Limit: 10, Deadline: at(time.Hour), Lease: pullLease()})
		if want := []string{low2.ID}; !slices.Equal(ids(rest), want) {
			t.Errorf("Pull of the rest: %v, want %v (none leased twice, none not due, expired or another's)", ids(rest), want)
		}
		queue("after the pulls", "s1", 2)

		// A lease that ends back in QUEUED (retry, replay) makes it pullable again.
		h.transition(herald.Transition{ID: high.ID, From: herald.StatusSentToNS, To: herald.StatusToRetry, Lease: first[0].Lease, At: now, DueAt: now})
		if n, err := h.s.Release(h.ctx, now, 10); err != nil || n != 1 {
			t.Fatalf("Release: %d %v", n, err)
		}
		h.transition(herald.Transition{ID: low1.ID, From: herald.StatusSentToNS, To: herald.StatusDeliveryFailed, At: now})
		h.transition(herald.Transition{ID: low1.ID, From: herald.StatusDeliveryFailed, To: herald.StatusQueued, At: now, DueAt: now, ResetAttempts: true})
		queue("after a retry and a replay", "s1", 4)
		if got := h.claim(at(2*time.Hour), 10); !slices.Equal(ids(got), []string{push.ID}) {
			t.Errorf("Claim after retry and replay: %v, want the push message only", ids(got))
		}
		again := h.pull(herald.PullClaim{Route: "room:r", Target: "s1", Now: now, Limit: 10, Deadline: at(time.Hour), Lease: pullLease()})
		if want := []string{high.ID, low1.ID}; !slices.Equal(ids(again), want) {
			t.Errorf("Pull after retry and replay: %v, want %v", ids(again), want)
		}
		if again[0].Attempt != 2 || again[0].Lease == first[0].Lease {
			t.Errorf("second lease of %s: attempt %d lease %d, want 2 and a fresh lease", high.ID, again[0].Attempt, again[0].Lease)
		}
	})

	// PullLeaseFences: puller A's lease runs out (the reaper hands the
	// delivery back) and puller B leases it again; A's late ack and nack,
	// made under A's lease, change nothing, and B's ack ends it.
	t.Run("PullLeaseFences", func(t *testing.T) {
		h := open(t)
		m := newMessage("room:r")
		m.Target, m.Pull, m.MaxAttempts = "s", true, 5
		h.create(m)
		pullAt := func(now time.Time) *herald.Message {
			t.Helper()
			p := herald.PullClaim{Route: "room:r", Target: "s", Now: now, Limit: 1, Deadline: now.Add(30 * time.Second), Lease: pullLease()}
			got := h.pull(p)
			if len(got) != 1 || got[0].ID != m.ID || got[0].Lease != p.Lease || h.get(m.ID).Lease != p.Lease {
				t.Fatalf("Pull at %v: %v, want %s under lease %d", now.Sub(t0), ids(got), m.ID, p.Lease)
			}
			return got[0]
		}
		a := pullAt(t0)
		expired := at(30 * time.Second)
		h.transition(herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusToRetry, Lease: a.Lease, At: expired, DueAt: expired,
			Reason: "lease expired"})
		if n, err := h.s.Release(h.ctx, expired, 10); err != nil || n != 1 {
			t.Fatalf("Release: %d %v", n, err)
		}
		b := pullAt(expired)
		before := h.get(m.ID)
		late := []herald.Transition{
			{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, Lease: a.Lease, At: at(40 * time.Second), Reason: "acknowledged"},
			{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusToRetry, Lease: a.Lease, At: at(40 * time.Second), DueAt: at(41 * time.Second), Reason: "nacked"},
		}
		for _, tr := range late {
			if err := h.s.Transition(h.ctx, tr); !errors.Is(err, herald.ErrConflict) {
				t.Errorf("A's late %s under its lease: %v, want ErrConflict", tr.Reason, err)
			}
		}
		if got := h.get(m.ID); got.Status != herald.StatusSentToNS || got.Lease != b.Lease || got.Attempt != 2 || len(got.Timeline) != len(before.Timeline) {
			t.Fatalf("after A's late ack and nack: %s lease %d attempt %d, %d entries; want B's lease untouched", got.Status, got.Lease, got.Attempt, len(got.Timeline))
		}
		h.transition(herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, Lease: b.Lease, At: at(40 * time.Second)})
		if got := h.get(m.ID); got.Status != herald.StatusDeliverySuccessful {
			t.Errorf("after B's ack: %s, want DELIVERY_SUCCESSFUL", got.Status)
		}
	})

	t.Run("PullOnce", func(t *testing.T) {
		h := open(t)
		const n = 200
		for range n {
			m := newMessage("room:r")
			m.Target, m.Pull = "s", true
			h.create(m)
		}
		seen := drainConcurrently(t, "Pull", func() ([]string, error) {
			got, err := h.s.Pull(h.ctx, herald.PullClaim{Route: "room:r", Target: "s", Now: t0, Limit: 7, Deadline: at(time.Hour), Lease: pullLease()})
			return ids(got), err
		})
		if len(seen) != n {
			t.Errorf("%d messages pulled, want %d", len(seen), n)
		}
		for id, k := range seen {
			if k != 1 {
				t.Errorf("%s pulled %d times", id, k)
			}
		}
	})

	t.Run("DeleteEnds", func(t *testing.T) {
		h := open(t)
		h.room("acme", "r", 0)
		a, b := h.sub("r", herald.SubscriptionPush), h.sub("r", herald.SubscriptionPull)
		var ps []herald.Publication
		for range 4 {
			p := publication(h.getRoom("acme", "r"), nil, a, b)
			h.publish(p)
			ps = append(ps, p)
		}
		// a's deliveries: QUEUED, in flight, TO_RETRY, delivered.
		aQueued, aFlying, aRetry, aDone := ps[0].Deliveries[0].ID, ps[1].Deliveries[0].ID, ps[2].Deliveries[0].ID, ps[3].Deliveries[0].ID
		h.walk(aFlying, t0, herald.StatusQueued, herald.StatusSentToNS)
		h.walk(aRetry, t0, herald.StatusQueued, herald.StatusSentToNS, herald.StatusToRetry)
		h.walk(aDone, t0, herald.StatusQueued, herald.StatusSentToNS, herald.StatusDeliverySuccessful)
		// b's: one leased, the others QUEUED.
		leased := h.pull(pullOf(b, t0, 1))
		end := herald.DeliveryEnd{At: at(time.Minute), Reason: "subscription deleted", CancelNotify: []string{"c"}, FailNotify: []string{"f"}}
		n, err := h.s.DeleteSubscription(h.ctx, "acme", a.ID, end)
		if err != nil || n != 3 {
			t.Fatalf("DeleteSubscription: %d %v, want 3 ended", n, err)
		}
		for id, want := range map[string]herald.Status{aQueued: herald.StatusCancelled, aRetry: herald.StatusCancelled,
			aFlying: herald.StatusDeliveryFailed, aDone: herald.StatusDeliverySuccessful} {
			m := h.get(id)
			if m.Status != want {
				t.Errorf("%s: %s, want %s", id, m.Status, want)
				continue
			}
			if want == herald.StatusDeliverySuccessful {
				continue
			}
			e := lastEntry(t, m)
			if e.Reason != "subscription deleted" || !sameTime(e.At, end.At) {
				t.Errorf("%s: last entry %+v, want the deletion's", id, e)
			}
			if want == herald.StatusDeliveryFailed && m.LastError != "subscription deleted" {
				t.Errorf("%s: last error %q, want the deletion's reason", id, m.LastError)
			}
		}
		evs := h.events(at(time.Hour))
		got := map[string]int{}
		for _, ev := range evs {
			got[ev.Subscriber+"."+string(ev.Type)]++
		}
		if want := map[string]int{"c.CANCELLED": 2, "f.DELIVERY_FAILED": 1}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("outcome events %v, want %v", got, want)
		}
		for _, p := range ps {
			if m := h.get(p.Deliveries[1].ID); m.Status.Terminal() {
				t.Errorf("b's delivery %s ended with a's deletion: %s", m.ID, m.Status)
			}
		}
		n, err = h.s.DeleteRoom(h.ctx, "acme", "r", end)
		if err != nil || n != 4 {
			t.Fatalf("DeleteRoom: %d %v, want b's 4 deliveries ended", n, err)
		}
		if m := h.get(leased[0].ID); m.Status != herald.StatusDeliveryFailed || m.Lease != 0 {
			t.Errorf("the leased delivery: %s lease %d, want DELIVERY_FAILED without its lease", m.Status, m.Lease)
		}
		if got := h.pull(pullOf(b, at(time.Hour), 10)); len(got) != 0 {
			t.Errorf("Pull after the deletion: %v, want none", ids(got))
		}
		if got := h.claim(at(time.Hour), 10); len(got) != 0 {
			t.Errorf("Claim after the deletion: %v, want none", ids(got))
		}
		if routes, _ := h.s.ActiveRoutes(h.ctx); len(routes) != 0 {
			t.Errorf("ActiveRoutes after the deletion: %v, want none", routes)
		}
	})

	// ReplayRacesDeletion: a transition that requires a subscription
	// applies only while it exists, checked in its own write, so a replay
	// (CANCELLED -> QUEUED) racing the subscription's deletion leaves no
	// QUEUED delivery of the deleted subscription, whichever goes first.
	t.Run("ReplayRacesDeletion", func(t *testing.T) {
		h := open(t)
		h.room("acme", "r", 0)
		end := herald.DeliveryEnd{At: t0, Reason: "subscription deleted"}
		deliver := func() (herald.Subscription, string) {
			t.Helper()
			s := h.sub("r", herald.SubscriptionPush)
			p := publication(h.getRoom("acme", "r"), nil, s)
			h.publish(p)
			id := p.Deliveries[0].ID
			h.transition(herald.Transition{ID: id, From: herald.StatusQueued, To: herald.StatusCancelled, At: t0, Reason: "cancelled"})
			return s, id
		}
		replay := func(s herald.Subscription, id string) error {
			return h.s.Transition(h.ctx, herald.Transition{ID: id, From: herald.StatusCancelled, To: herald.StatusQueued, At: at(time.Second),
				DueAt: at(time.Second), ResetAttempts: true, Reason: "replayed", RequireSubscription: s.ID})
		}

		kept, keptID := deliver()
		if err := replay(kept, keptID); err != nil {
			t.Fatalf("replay while the subscription exists: %v", err)
		}
		if m := h.get(keptID); m.Status != herald.StatusQueued {
			t.Errorf("replayed while the subscription exists: %s, want QUEUED", m.Status)
		}
		gone, goneID := deliver()
		if _, err := h.s.DeleteSubscription(h.ctx, "acme", gone.ID, end); err != nil {
			t.Fatal(err)
		}
		before := h.get(goneID)
		if err := replay(gone, goneID); !errors.Is(err, herald.ErrConflict) {
			t.Errorf("replay after the deletion: %v, want ErrConflict", err)
		}
		if m := h.get(goneID); m.Status != herald.StatusCancelled || len(m.Timeline) != len(before.Timeline) {
			t.Errorf("replayed after the deletion: %s, %d entries; want it CANCELLED as it was", m.Status, len(m.Timeline))
		}

		replayedFirst := 0
		const rounds = 40
		for range rounds {
			s, id := deliver()
			var (
				wg                sync.WaitGroup
				replayErr, delErr error
			)
			wg.Go(func() { replayErr = replay(s, id) })
			wg.Go(func() { _, delErr = h.s.DeleteSubscription(h.ctx, "acme", s.ID, end) })
			wg.Wait()
			if delErr != nil || (replayErr != nil && !errors.Is(replayErr, herald.ErrConflict)) {
				t.Fatalf("deletion %v, replay %v", delErr, replayErr)
			}
			if replayErr == nil {
				replayedFirst++
			}
			if m := h.get(id); m.Status != herald.StatusCancelled {
				t.Fatalf("delivery %s of the deleted subscription: %s (replay %v), want CANCELLED", id, m.Status, replayErr)
			}
		}
		t.Logf("%d of %d replays went before their deletion", replayedFirst, rounds)
	})

	t.Run("PruneEvents", func(t *testing.T) {
		h := open(t)
		h.room("acme", "r", 0)
		old, late := publication(h.getRoom("acme", "r"), nil), publication(h.getRoom("acme", "r"), nil)
		late.Event.CreatedAt = at(time.Hour)
		h.publish(old)
		h.publish(late)
		if n, err := h.s.Prune(h.ctx, at(time.Minute), 10); err != nil || n != 1 {
			t.Fatalf("Prune: %d %v, want the old event", n, err)
		}
		if _, err := h.s.RoomEvent(h.ctx, old.Event.ID); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("old event after Prune: %v, want ErrNotFound", err)
		}
		if _, err := h.s.RoomEvent(h.ctx, late.Event.ID); err != nil {
			t.Errorf("late event after Prune: %v", err)
		}
	})

	// An event whose delivery is still active is not pruned: the delivery
	// reads the event's data when it is sent. Once it ended, the event goes.
	t.Run("PruneKeepsEventsOfActiveDeliveries", func(t *testing.T) {
		h := open(t)
		h.room("acme", "r", 0)
		s := h.sub("r", herald.SubscriptionPull)
		p := publication(h.getRoom("acme", "r"), []byte(`{"n":1}`), s)
		p.Deliveries[0].Text = "" // the data is the event's
		h.publish(p)
		if n, err := h.s.Prune(h.ctx, at(30*24*time.Hour), 10); err != nil || n != 0 {
			t.Fatalf("Prune with the delivery QUEUED: %d %v, want nothing pruned", n, err)
		}
		if _, err := h.s.RoomEvent(h.ctx, p.Event.ID); err != nil {
			t.Fatalf("the event of a QUEUED delivery after Prune: %v", err)
		}
		h.transition(herald.Transition{ID: p.Deliveries[0].ID, From: herald.StatusQueued, To: herald.StatusCancelled, At: at(time.Hour)})
		if _, err := h.s.Prune(h.ctx, at(30*24*time.Hour), 10); err != nil {
			t.Fatal(err)
		}
		if _, err := h.s.RoomEvent(h.ctx, p.Event.ID); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("the event after its delivery ended and Prune: %v, want ErrNotFound", err)
		}
	})

	// PullPastExpired: a subscriber that did not pull for a while has 300
	// deliveries that expired (the reaper has not failed them yet) ahead
	// of one that has not: Pull leases the one that is due and not
	// expired, as its contract says, however many expired ones are
	// ahead of it.
	t.Run("PullPastExpired", func(t *testing.T) {
		h := open(t)
		var msgs []*herald.Message
		for range 300 {
			m := newMessage("room:r")
			m.Target, m.Pull, m.ExpiresAt = "s", true, at(time.Minute)
			msgs = append(msgs, m)
		}
		h.createAll(msgs)
		fresh := newMessage("room:r")
		fresh.Target, fresh.Pull = "s", true
		h.create(fresh)
		got := h.pull(herald.PullClaim{Route: "room:r", Target: "s", Now: at(2 * time.Minute), Limit: 1, Deadline: at(time.Hour), Lease: pullLease()})
		if want := []string{fresh.ID}; !slices.Equal(ids(got), want) {
			t.Errorf("Pull of 1 past 300 expired deliveries: %v, want %v", ids(got), want)
		}
	})
}

// room creates tenant's room name with expiration and DefaultDelivery,
// created at t0 at revision 1, and returns it.
func (h *harness) room(tenant, name string, expiration time.Duration) herald.Room {
	h.t.Helper()
	r := herald.Room{Tenant: tenant, Name: name, Expiration: expiration, Delivery: herald.DefaultDelivery, CreatedAt: t0, Revision: 1}
	h.createRoom(r)
	return r
}

func (h *harness) createRoom(r herald.Room) {
	h.t.Helper()
	if err := h.s.CreateRoom(h.ctx, r); err != nil {
		h.t.Fatalf("CreateRoom %s: %v", r.Name, err)
	}
}

func (h *harness) getRoom(tenant, name string) *herald.Room {
	h.t.Helper()
	r, err := h.s.Room(h.ctx, tenant, name)
	if err != nil {
		h.t.Fatalf("Room %s: %v", name, err)
	}
	return r
}

// sub creates a subscription of type typ to acme's room, taking every
// event, and returns it.
func (h *harness) sub(room string, typ herald.SubscriptionType) herald.Subscription {
	h.t.Helper()
	s := herald.Subscription{ID: nextID(), Tenant: "acme", Room: room, Type: typ, CreatedAt: t0}
	if typ == herald.SubscriptionPush {
		s.URL = "http://127.0.0.1:9/in"
	}
	h.subscribe(s)
	return s
}

func (h *harness) subscribe(s herald.Subscription) {
	h.t.Helper()
	if err := h.s.CreateSubscription(h.ctx, s); err != nil {
		h.t.Fatalf("CreateSubscription: %v", err)
	}
}

func (h *harness) getSubscription(id string) *herald.Subscription {
	h.t.Helper()
	s, err := h.s.Subscription(h.ctx, id)
	if err != nil {
		h.t.Fatalf("Subscription %s: %v", id, err)
	}
	return s
}

func (h *harness) publish(p herald.Publication) {
	h.t.Helper()
	if err := h.s.Publish(h.ctx, p); err != nil {
		h.t.Fatalf("Publish: %v", err)
	}
}

func (h *harness) pull(p herald.PullClaim) []*herald.Message {
	h.t.Helper()
	got, err := h.s.Pull(h.ctx, p)
	if err != nil {
		h.t.Fatalf("Pull: %v", err)
	}
	return got
}

// publication returns an event of room, published at t0 with data, and a
// delivery to each of subs, as the engine makes them.
func publication(room *herald.Room, data []byte, subs ...herald.Subscription) herald.Publication {
	if data == nil {
		data = []byte("null")
	}
	ev := herald.RoomEvent{ID: nextID(), Tenant: room.Tenant, Room: room.Name, Type: "order.created", Version: "1",
		CorrelationID: "corr-" + room.Name, Data: data, CreatedAt: t0}
	p := herald.Publication{Revision: room.Revision}
	for i, s := range subs {
		m := &herald.Message{ID: nextID(), Tenant: room.Tenant, Route: herald.RoomRoutePrefix + room.Name, Target: s.ID, Lane: s.ID,
			Text: string(data), Params: map[string]string{"event_id": ev.ID, "type": ev.Type, "version": ev.Version},
			CorrelationID: ev.CorrelationID, Status: herald.StatusQueued, MaxAttempts: 3 + i, CreatedAt: t0, UpdatedAt: t0, DueAt: t0,
			Pull: s.Type == herald.SubscriptionPull, Backoff: herald.Backoff{Delay: time.Duration(i+1) * time.Second, Multiplier: 2}}
		if room.Expiration > 0 {
			m.ExpiresAt = t0.Add(room.Expiration)
		}
		p.Deliveries = append(p.Deliveries, m)
		ev.Deliveries = append(ev.Deliveries, herald.Delivery{SubscriptionID: s.ID, MessageID: m.ID})
	}
	p.Event = ev
	return p
}

// pullOf is a pull of up to limit of s's deliveries at now, leased for an
// hour under a fresh lease.
func pullOf(s herald.Subscription, now time.Time, limit int) herald.PullClaim {
	return herald.PullClaim{Route: herald.RoomRoutePrefix + s.Room, Target: s.ID, Now: now, Limit: limit, Deadline: now.Add(time.Hour),
		Lease: pullLease()}
}

func checkRoom(t *testing.T, what string, got *herald.Room, want herald.Room) {
	t.Helper()
	if got.Tenant != want.Tenant || got.Name != want.Name || got.Expiration != want.Expiration || got.Delivery != want.Delivery ||
		got.Revision != want.Revision || !sameTime(got.CreatedAt, want.CreatedAt) || got.Subscriptions != want.Subscriptions {
		t.Errorf("%s: %+v, want %+v", what, *got, want)
	}
}

func checkSubscription(t *testing.T, what string, got *herald.Subscription, want herald.Subscription) {
	t.Helper()
	same := func(a, b herald.DeliveryOverrides) bool {
		eq := func(x, y bool, vx, vy any) bool { return x == y && (!x || vx == vy) }
		return eq(a.Delay != nil, b.Delay != nil, deref(a.Delay), deref(b.Delay)) &&
			eq(a.Multiplier != nil, b.Multiplier != nil, deref(a.Multiplier), deref(b.Multiplier)) &&
			eq(a.Attempts != nil, b.Attempts != nil, deref(a.Attempts), deref(b.Attempts))
	}
	if got.ID != want.ID || got.Tenant != want.Tenant || got.Room != want.Room || got.Type != want.Type || got.URL != want.URL ||
		got.SecretEnv != want.SecretEnv || got.Secret != want.Secret || !slices.Equal(got.EventTypes, want.EventTypes) || !same(got.Delivery, want.Delivery) ||
		!sameTime(got.CreatedAt, want.CreatedAt) {
		t.Errorf("%s: %+v, want %+v", what, *got, want)
	}
}

// deref returns *p, or nil for a nil p.
func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func checkRoomEvent(t *testing.T, got, want *herald.RoomEvent) {
	t.Helper()
	if got.ID != want.ID || got.Tenant != want.Tenant || got.Room != want.Room || got.Type != want.Type || got.Version != want.Version ||
		got.CorrelationID != want.CorrelationID || string(got.Data) != string(want.Data) || !sameTime(got.CreatedAt, want.CreatedAt) ||
		!slices.Equal(got.Deliveries, want.Deliveries) {
		t.Errorf("RoomEvent: %+v, want %+v", *got, *want)
	}
}
