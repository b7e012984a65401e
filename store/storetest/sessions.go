package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// testSessions checks herald.SessionStore, when the store implements it
// (exerciseSessions):
// a session is read back as it was stored; it ends at its Expires, which
// a touch moves while it lives and cannot move once it has ended; a
// tenant's sessions beyond its bound end least recently used first, never
// another tenant's, and ended ones make room before any live one; a
// deleted session is gone and frees its place.
func testSessions(t *testing.T, open opener) {
	h := open(t)
	ss, ok := h.s.(herald.SessionStore)
	if !ok {
		t.Skip("the store keeps no sessions (herald.SessionStore)")
	}
	exerciseSessions(t, ss)
}

// ExerciseSessions runs the conformance suite of herald.SessionStore on
// ss, a store of no session yet: what Exercise runs on a herald.Store that
// is one, for a SessionStore that is no herald.Store (the admin page's in
// memory).
func ExerciseSessions(t *testing.T, ss herald.SessionStore) {
	exerciseSessions(t, ss)
}

func exerciseSessions(t *testing.T, ss herald.SessionStore) {
	ctx := t.Context()
	const (
		ttl  = 12 * time.Hour
		idle = 30 * time.Minute
	)
	seq := 0
	newSession := func(tenant string, at time.Time) herald.Session {
		seq++
		return herald.Session{ID: fmt.Sprintf("sess-%s-%03d", tenant, seq), Tenant: tenant, Role: "write",
			CSRF: fmt.Sprintf("csrf-%03d", seq), Created: at, Used: at, Expires: at.Add(idle)}
	}
	create := func(s herald.Session, bound int) {
		t.Helper()
		if err := ss.CreateSession(ctx, s, bound); err != nil {
			t.Fatalf("CreateSession %s: %v", s.ID, err)
		}
	}
	live := func(id string, now time.Time) bool {
		t.Helper()
		got, err := ss.Session(ctx, id, now)
		if errors.Is(err, herald.ErrNotFound) {
			return false
		}
		if err != nil {
			t.Fatalf("Session %s: %v", id, err)
		}
		if got.ID != id {
			t.Fatalf("Session %s returned %s", id, got.ID)
		}
		return true
	}
	touch := func(id string, used time.Time, created time.Time) error {
		end := used.Add(idle)
		if life := created.Add(ttl); life.Before(end) {
			end = life
		}
		return ss.TouchSession(ctx, id, used, end)
	}

	t.Run("CreateRead", func(t *testing.T) {
		s := newSession("a|b%c", at(0)) // a tenant with the characters a key escapes
		s.Role = "read"
		create(s, 100)
		got, err := ss.Session(ctx, s.ID, at(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if got.Tenant != s.Tenant || got.Role != "read" || got.CSRF != s.CSRF ||
			!got.Created.Equal(s.Created) || !got.Used.Equal(s.Used) || !got.Expires.Equal(s.Expires) {
			t.Errorf("Session = %+v, want %+v", got, s)
		}
		if _, err := ss.Session(ctx, "no-such-session", at(0)); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("Session of an unknown id: %v, want ErrNotFound", err)
		}
	})

	t.Run("IdleTimeout", func(t *testing.T) {
		s := newSession("idle", at(0))
		create(s, 100)
		if !live(s.ID, at(idle-time.Millisecond)) {
			t.Error("a session ended before its idle timeout")
		}
		if live(s.ID, at(idle)) {
			t.Error("a session lives at its Expires")
		}
		// A touch while it lives moves its end.
		used := newSession("idle", at(0))
		create(used, 100)
		if err := touch(used.ID, at(20*time.Minute), used.Created); err != nil {
			t.Fatal(err)
		}
		if !live(used.ID, at(49*time.Minute)) {
			t.Error("a session touched at 20 minutes ended before 50")
		}
		got, _ := ss.Session(ctx, used.ID, at(49*time.Minute))
		if got != nil && !got.Used.Equal(at(20*time.Minute)) {
			t.Errorf("Used = %v after the touch, want %v", got.Used, at(20*time.Minute))
		}
		if live(used.ID, at(50*time.Minute)) {
			t.Error("a session touched at 20 minutes lives at 50, idle 30")
		}
		// Once ended, a touch changes nothing.
		if err := touch(used.ID, at(51*time.Minute), used.Created); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("a touch of an ended session: %v, want ErrNotFound", err)
		}
		if live(used.ID, at(52*time.Minute)) {
			t.Error("a touch revived an ended session")
		}
		if err := touch("no-such-session", at(0), at(0)); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("a touch of an unknown session: %v, want ErrNotFound", err)
		}
	})

	t.Run("Lifetime", func(t *testing.T) {
		s := newSession("life", at(0))
		create(s, 100)
		var last time.Time
		for u := 25 * time.Minute; u < ttl; u += 25 * time.Minute { // used every 25 minutes
			if err := touch(s.ID, at(u), s.Created); err != nil {
				t.Fatalf("touch at %v: %v", u, err)
			}
			last = at(u)
		}
		if !live(s.ID, last.Add(time.Minute)) || !live(s.ID, at(ttl-time.Millisecond)) {
			t.Error("a session used every 25 minutes ended before its lifetime")
		}
		if live(s.ID, at(ttl)) {
			t.Error("a session lives past its lifetime, however much it is used")
		}
	})

	t.Run("BoundPerTenant", func(t *testing.T) {
		const bound = 3
		other := newSession("globex", at(0))
		create(other, bound)
		var acme []herald.Session
		for i := range bound {
			s := newSession("acme", at(time.Duration(i)*time.Second))
			create(s, bound)
			acme = append(acme, s)
		}
		// The oldest is used now: the second is the least recently used.
		if err := touch(acme[0].ID, at(10*time.Second), acme[0].Created); err != nil {
			t.Fatal(err)
		}
		fourth := newSession("acme", at(11*time.Second))
		create(fourth, bound)
		now := at(12 * time.Second)
		for i, want := range []bool{true, false, true} {
			if live(acme[i].ID, now) != want {
				t.Errorf("acme's session %d live = %v, want %v (the least recently used ends)", i, !want, want)
			}
		}
		if !live(fourth.ID, now) || !live(other.ID, now) {
			t.Error("the new session, or another tenant's, ended")
		}
		// Many more logins: 3 at most, the latest, and globex's lives on.
		var latest []herald.Session
		for i := range 10 {
			s := newSession("acme", at(time.Minute+time.Duration(i)*time.Second))
			create(s, bound)
			latest = append(latest, s)
		}
		now = at(2 * time.Minute)
		n := 0
		for _, s := range append(append(acme, fourth), latest...) {
			if live(s.ID, now) {
				n++
			}
		}
		if n != bound {
			t.Errorf("acme holds %d live sessions, want %d", n, bound)
		}
		for _, s := range latest[len(latest)-bound:] {
			if !live(s.ID, now) {
				t.Errorf("acme's session %s, among its latest, ended", s.ID)
			}
		}
		if !live(other.ID, now) {
			t.Error("acme's logins ended globex's session")
		}

		// Ended sessions make room before a live one does.
		a := newSession("initech", at(0))
		create(a, bound)
		b := newSession("initech", at(time.Second))
		b.Expires = at(time.Minute) // ends early
		create(b, bound)
		c := newSession("initech", at(2*time.Second))
		create(c, bound)
		d := newSession("initech", at(2*time.Minute)) // b has ended
		create(d, bound)
		now = at(3 * time.Minute)
		if !live(a.ID, now) || !live(c.ID, now) || !live(d.ID, now) {
			t.Error("a live session ended while an ended one could make room")
		}
	})

	t.Run("Delete", func(t *testing.T) {
		const bound = 2
		a, b := newSession("hooli", at(0)), newSession("hooli", at(time.Second))
		create(a, bound)
		create(b, bound)
		if err := ss.DeleteSession(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if live(a.ID, at(2*time.Second)) {
			t.Error("a deleted session lives")
		}
		if err := ss.DeleteSession(ctx, a.ID); err != nil {
			t.Errorf("deleting it again: %v, want nil", err)
		}
		if err := touch(a.ID, at(3*time.Second), a.Created); !errors.Is(err, herald.ErrNotFound) {
			t.Errorf("a touch of a deleted session: %v, want ErrNotFound", err)
		}
		c := newSession("hooli", at(4*time.Second)) // the deleted one's place
		create(c, bound)
		if !live(b.ID, at(5*time.Second)) || !live(c.ID, at(5*time.Second)) {
			t.Error("a deletion did not free its place: a live session ended")
		}
	})
}
