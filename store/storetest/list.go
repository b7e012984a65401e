package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

func testList(t *testing.T, open opener) {
	t.Run("Filters", func(t *testing.T) {
		h := open(t)
		type row struct {
			tenant, route, corr string
			updated             time.Duration
			path                []herald.Status
			lastError           string
		}
		q, s, r, f := herald.StatusQueued, herald.StatusSentToNS, herald.StatusToRetry, herald.StatusDeliveryFailed
		rows := []row{
			{"acme", "r1", "c1", 0, nil, ""},
			{"acme", "r1", "c2", time.Minute, []herald.Status{q, s}, ""},
			{"acme", "r2", "c1", 2 * time.Minute, []herald.Status{q, s, f}, "chat not found (400)"},
			{"globex", "r1", "c1", 3 * time.Minute, []herald.Status{q, s, f}, "timeout"},
			{"acme", "r2", "", 4 * time.Minute, []herald.Status{q, s, r}, "chat not found"},
			{"acme", "r1", "", 5 * time.Minute, []herald.Status{q, s, f}, "gateway timeout"},
		}
		var msgs []*herald.Message
		for _, rw := range rows {
			m := newMessage(rw.route)
			m.Tenant, m.CorrelationID = rw.tenant, rw.corr
			h.create(m)
			for i := 1; i < len(rw.path); i++ {
				h.transition(herald.Transition{ID: m.ID, From: rw.path[i-1], To: rw.path[i], At: at(rw.updated), LastError: rw.lastError})
			}
			msgs = append(msgs, m)
		}
		// want returns the ids of msgs[i...], newest first.
		want := func(i ...int) []string {
			var out []string
			for _, k := range slices.Backward(i) {
				out = append(out, msgs[k].ID)
			}
			return out
		}
		for _, c := range []struct {
			name string
			q    herald.Query
			want []string
		}{
			{"All", herald.Query{}, want(0, 1, 2, 3, 4, 5)},
			{"Tenant", herald.Query{Tenant: "acme"}, want(0, 1, 2, 4, 5)},
			{"Status", herald.Query{Status: f}, want(2, 3, 5)},
			{"Route", herald.Query{Route: "r2"}, want(2, 4)},
			{"CorrelationID", herald.Query{CorrelationID: "c1"}, want(0, 2, 3)},
			{"Reason", herald.Query{Status: f, Reason: "chat not found"}, want(2)},
			{"Since", herald.Query{Since: at(3 * time.Minute)}, want(3, 4, 5)},
			{"Until", herald.Query{Until: at(time.Minute)}, want(0)},
			{"SinceUntil", herald.Query{Since: at(time.Minute), Until: at(3 * time.Minute)}, want(1, 2)},
			{"Combined", herald.Query{Tenant: "acme", Route: "r1", Status: q}, want(0)},
		} {
			got, cursor, err := h.s.List(h.ctx, c.q)
			if err != nil {
				t.Fatalf("%s: List: %v", c.name, err)
			}
			if !slices.Equal(ids(got), c.want) || cursor != "" {
				t.Errorf("%s: List = %v cursor %q, want %v and no cursor", c.name, ids(got), cursor, c.want)
			}
		}
	})

	t.Run("Target", func(t *testing.T) {
		h := open(t)
		var msgs []*herald.Message
		for _, target := range []string{"meter-4711", "meter-4712", "meter-4711", "meter-471", "METER-4711"} {
			m := newMessage("r1")
			m.Target = target
			msgs = append(msgs, h.create(m))
		}
		other := newMessage("r1")
		other.Tenant, other.Target = "globex", "meter-4711"
		h.create(other)
		h.walk(msgs[2].ID, at(time.Second), herald.StatusQueued, herald.StatusSentToNS)

		for _, c := range []struct {
			name string
			q    herald.Query
			want []string
		}{
			// Exact: not a prefix, not a substring, not another case.
			{"Exact", herald.Query{Tenant: "acme", Target: "meter-4711"}, []string{msgs[2].ID, msgs[0].ID}},
			{"EveryTenant", herald.Query{Target: "meter-4711"}, []string{other.ID, msgs[2].ID, msgs[0].ID}},
			{"WithStatus", herald.Query{Tenant: "acme", Target: "meter-4711", Status: herald.StatusQueued}, []string{msgs[0].ID}},
			{"None", herald.Query{Tenant: "acme", Target: "meter-9"}, nil},
		} {
			got, cursor, err := h.s.List(h.ctx, c.q)
			if err != nil {
				t.Fatalf("%s: List: %v", c.name, err)
			}
			if !slices.Equal(ids(got), c.want) || cursor != "" {
				t.Errorf("%s: List = %v cursor %q, want %v and no cursor", c.name, ids(got), cursor, c.want)
			}
		}

		// Paging walks the target's messages only.
		first, cursor, err := h.s.List(h.ctx, herald.Query{Tenant: "acme", Target: "meter-4711", Limit: 1})
		if err != nil || !slices.Equal(ids(first), []string{msgs[2].ID}) || cursor == "" {
			t.Fatalf("first page = %v cursor %q, %v; want [%s] and a cursor", ids(first), cursor, err, msgs[2].ID)
		}
		second, cursor, err := h.s.List(h.ctx, herald.Query{Tenant: "acme", Target: "meter-4711", Limit: 1, Cursor: cursor})
		if err != nil || !slices.Equal(ids(second), []string{msgs[0].ID}) {
			t.Fatalf("second page = %v cursor %q, %v; want [%s]", ids(second), cursor, err, msgs[0].ID)
		}
		if cursor != "" {
			third, _, err := h.s.List(h.ctx, herald.Query{Tenant: "acme", Target: "meter-4711", Limit: 1, Cursor: cursor})
			if err != nil || len(third) != 0 {
				t.Errorf("third page = %v, %v; want none", ids(third), err)
			}
		}
	})

	t.Run("IDPrefix", func(t *testing.T) {
		h := open(t)
		// Ids of one millisecond share their first 13 characters, as
		// herald's time-ordered ids do.
		made := []string{"0190aa00-0000-7000-8000-000000000001", "0190aa00-0000-7000-8000-000000000002",
			"0190aa01-0000-7000-8000-000000000003", "0190ab00-0000-7000-8000-000000000004"}
		for _, id := range made {
			m := newMessage("r1")
			m.ID = id
			h.create(m)
		}
		other := newMessage("r1")
		other.ID, other.Tenant = "0190aa00-0000-7000-8000-000000000005", "globex"
		h.create(other)
		h.walk(made[1], at(time.Second), herald.StatusQueued, herald.StatusSentToNS, herald.StatusDeliveryFailed)

		for _, c := range []struct {
			name string
			q    herald.Query
			want []string
		}{
			{"Unique", herald.Query{Tenant: "acme", IDPrefix: "0190aa01"}, []string{made[2]}},
			{"Several", herald.Query{Tenant: "acme", IDPrefix: "0190aa00"}, []string{made[1], made[0]}},
			{"Shorter", herald.Query{Tenant: "acme", IDPrefix: "0190a"}, []string{made[3], made[2], made[1], made[0]}},
			{"Whole", herald.Query{Tenant: "acme", IDPrefix: made[0]}, []string{made[0]}},
			{"None", herald.Query{Tenant: "acme", IDPrefix: "0190aa02"}, nil},
			{"EveryTenant", herald.Query{IDPrefix: "0190aa00"}, []string{other.ID, made[1], made[0]}},
			{"WithStatus", herald.Query{Tenant: "acme", IDPrefix: "0190aa", Status: herald.StatusQueued}, []string{made[2], made[0]}},
			{"DeadLetters", herald.Query{Tenant: "acme", IDPrefix: "0190aa", Status: herald.StatusDeliveryFailed}, []string{made[1]}},
		} {
			got, cursor, err := h.s.List(h.ctx, c.q)
			if err != nil {
				t.Fatalf("%s: List: %v", c.name, err)
			}
			if !slices.Equal(ids(got), c.want) || cursor != "" {
				t.Errorf("%s: List = %v cursor %q, want %v and no cursor", c.name, ids(got), cursor, c.want)
			}
		}

		// Paging stays within the prefix.
		first, cursor, err := h.s.List(h.ctx, herald.Query{Tenant: "acme", IDPrefix: "0190aa", Limit: 2})
		if err != nil || !slices.Equal(ids(first), []string{made[2], made[1]}) || cursor == "" {
			t.Fatalf("first page = %v cursor %q, %v; want %v and a cursor", ids(first), cursor, err, []string{made[2], made[1]})
		}
		second, cursor, err := h.s.List(h.ctx, herald.Query{Tenant: "acme", IDPrefix: "0190aa", Limit: 2, Cursor: cursor})
		if err != nil || !slices.Equal(ids(second), []string{made[0]}) || cursor != "" {
			t.Errorf("second page = %v cursor %q, %v; want [%s] and no cursor", ids(second), cursor, err, made[0])
		}
	})

	t.Run("Fields", func(t *testing.T) {
		h := open(t)
		m := newMessage("r1")
		m.Payload, m.Params, m.Priority, m.ExpiresAt = []byte("bytes"), map[string]string{"k": "v"}, 3, at(time.Hour)
		h.create(m)
		h.walk(m.ID, at(time.Second), herald.StatusQueued, herald.StatusSentToNS)
		got, _, err := h.s.List(h.ctx, herald.Query{})
		if err != nil || len(got) != 1 {
			t.Fatalf("List = %d messages, %v; want 1", len(got), err)
		}
		if len(got[0].Timeline) != 0 {
			t.Errorf("List returned a timeline of %d entries, want none", len(got[0].Timeline))
		}
		if d := diffMessage(got[0], h.get(m.ID)); len(d) > 0 {
			t.Errorf("List differs from Get: %v", d)
		}
	})

	t.Run("Paging", func(t *testing.T) {
		for _, n := range []int{25, 21} {
			h := open(t)
			msgs := make([]*herald.Message, n)
			for i := range msgs {
				msgs[i] = newMessage("r1")
			}
			h.createAll(msgs)
			var (
				got    []string
				cursor string
			)
			for page := 0; ; page++ {
				if page > n {
					t.Fatalf("%d messages: paging does not end", n)
				}
				list, next, err := h.s.List(h.ctx, herald.Query{Limit: 7, Cursor: cursor})
				if err != nil {
					t.Fatalf("List: %v", err)
				}
				if len(list) > 7 {
					t.Errorf("page of %d messages, want at most 7", len(list))
				}
				got = append(got, ids(list)...)
				if next == "" {
					break
				}
				cursor = next
			}
			want := slices.Sorted(slices.Values(ids(msgs)))
			slices.Reverse(want)
			if !slices.Equal(got, want) {
				t.Errorf("%d messages: pages visit %v, want %v", n, got, want)
			}
		}
	})

	t.Run("DefaultLimit", func(t *testing.T) {
		h := open(t)
		msgs := make([]*herald.Message, 120)
		for i := range msgs {
			msgs[i] = newMessage("r1")
		}
		h.createAll(msgs)
		got, cursor, err := h.s.List(h.ctx, herald.Query{})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(got) != 100 || cursor == "" {
			t.Errorf("List without a limit = %d messages, cursor %q; want 100 and a cursor", len(got), cursor)
		}
	})
}
