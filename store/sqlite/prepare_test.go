package sqlite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	sqlite3 "github.com/mattn/go-sqlite3"
)

// TestHotStatementsStayPrepared runs the messages' lifecycle three times on
// every kind of route, with the reads of the loops and the API, and fails
// when the third round compiled a statement on the writer's connection or
// on the read connection. SQLite re-prepares a statement at its next step
// after a new value is bound to a variable that it planned with (a
// "column = ?" that a partial index's or an ORDER BY's planning compared,
// a bare "LIMIT ?"): compiling again costs far more than the statement
// itself, on every call. Such variables are written with a unary plus
// ("= +?1") or a CAST, which SQLite never plans with.
func TestHotStatementsStayPrepared(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	rules := map[string]herald.Admission{
		"kept":    {Concurrency: 2, ClaimAhead: 8},
		"capped":  {Concurrency: 2},
		"tenants": {TenantRate: herald.Rate{N: 1000, Per: time.Minute}},
		"ordered": {Ordered: true, Concurrency: 1},
		"spaced":  {Spacing: time.Millisecond, Rate: herald.Rate{N: 1000, Per: time.Minute}},
		"circuit": {Concurrency: 4, Circuit: herald.Circuit{Failures: 3, CoolDown: time.Millisecond}},
	}
	if err := s.SetAdmission(ctx, rules); err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		compiled map[string]int // what the statements compiled read and wrote, by step
	)
	count := func(dc any) error {
		dc.(*sqlite3.SQLiteConn).RegisterAuthorizer(func(op int, a, b, c string) int {
			mu.Lock()
			defer mu.Unlock()
			if compiled != nil {
				compiled[fmt.Sprintf("%s: %s %s %s", step.Load(), authAction(op), a, b)]++
			}
			return sqlite3.SQLITE_OK
		})
		return nil
	}
	if err := s.w.conn.Raw(count); err != nil {
		t.Fatal(err)
	}
	// The reads go through one connection, which counts too.
	s.read.SetMaxOpenConns(1)
	rc, err := s.read.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Raw(count); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	// Every size of grouped transitions is compiled once, before counting
	// (with the authorizer set: setting it expires the statements prepared).
	if err := s.write(ctx, func(tx *wtx) error {
		for n := 1; n <= maxGroup; n++ {
			if _, err := tx.st.transitionsStmt(tx.conn, n); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	base := time.Now()
	for round := range 3 {
		mu.Lock()
		if round == 2 { // rounds 0 and 1 compile (setting the authorizer expires every statement)
			compiled = map[string]int{}
		}
		mu.Unlock()
		lifecycle(t, s, base.Add(time.Duration(round)*time.Hour), round)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(compiled) > 0 {
		var seen []string
		for k, n := range compiled {
			seen = append(seen, fmt.Sprintf("%s ×%d", k, n))
		}
		slices.Sort(seen)
		t.Errorf("the third round compiled statements again; what they read and wrote, by step:\n%s", strings.Join(seen, "\n"))
	}
}

// step names the step of lifecycle under way.
var step atomic.Value

// authAction names the authorizer's action codes that statements use.
func authAction(op int) string {
	switch op {
	case sqlite3.SQLITE_READ:
		return "read"
	case sqlite3.SQLITE_UPDATE:
		return "update"
	case sqlite3.SQLITE_INSERT:
		return "insert"
	case sqlite3.SQLITE_DELETE:
		return "delete"
	case sqlite3.SQLITE_SELECT:
		return "select"
	case sqlite3.SQLITE_FUNCTION:
		return "function"
	}
	return fmt.Sprint("action ", op)
}

// lifecycle creates messages on the routes of TestHotStatementsStayPrepared
// and an ungated one at now, claims them, and ends them in every way the
// engine does: one at a time and grouped, delivered, retried, paused,
// handed back; then releases the retries and reports to the circuit.
func lifecycle(t *testing.T, s *Store, now time.Time, round int) {
	t.Helper()
	ctx := context.Background()
	routes := []string{"free", "kept", "capped", "tenants", "ordered", "spaced", "circuit"}
	step.Store("create")
	for i := range 4 * len(routes) {
		r := routes[i%len(routes)]
		m := testMessage(fmt.Sprintf("m-%d-%03d", round, i))
		m.Route, m.Lane, m.Tenant = r, fmt.Sprintf("lane-%d-%d", round, i%3), fmt.Sprintf("t%d", i%2)
		m.Target = fmt.Sprintf("x%d", i%5)
		m.CreatedAt, m.UpdatedAt, m.DueAt = now, now, now
		m.ExpiresAt = now.Add(time.Hour)
		if i%3 == 0 {
			m.IdempotencyKey = fmt.Sprintf("k-%d-%d", round, i)
		}
		if i%4 == 0 {
			m.CoalesceKey = fmt.Sprintf("c-%d-%d", round, i)
		}
		var opt herald.CreateOptions
		if i%5 == 0 {
			m.DedupKey, opt.DedupSince = fmt.Sprintf("d%d", i%2), now.Add(-time.Hour)
		}
		if _, _, err := s.Create(ctx, m, opt); err != nil {
			t.Fatal(err)
		}
	}
	claim := herald.Claim{Now: now.Add(time.Second), Limit: 100, GatedLimit: 100, DefaultAccept: time.Minute,
		AcceptTimeouts: map[string]time.Duration{"kept": time.Minute, "free": 2 * time.Minute}, Node: "n"}
	step.Store("claim")
	msgs, err := s.Claim(ctx, claim)
	if err != nil || len(msgs) == 0 {
		t.Fatalf("Claim = %d messages, %v", len(msgs), err)
	}
	at := now.Add(2 * time.Second)
	step.Store("transition")
	var wg sync.WaitGroup
	for i, m := range msgs {
		tr := herald.Transition{ID: m.ID, From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful, Lease: m.Lease, At: at, Notify: []string{"hook"}}
		switch i % 5 {
		case 1:
			tr.To, tr.DueAt, tr.LastError, tr.Reason = herald.StatusToRetry, at, "boom", "transient"
		case 2:
			tr.To, tr.DueAt, tr.UndoAttempt, tr.Reason = herald.StatusToRetry, at, true, "backpressure"
			tr.PauseUntil, tr.PauseReason = at.Add(time.Millisecond), "backpressure"
		case 3:
			tr.To, tr.ExternalID, tr.Deadline = herald.StatusDeliveredToNS, "ext-"+m.ID, at.Add(time.Minute)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Transition(ctx, tr); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	step.Store("release")
	if _, err := s.Release(ctx, at.Add(time.Second), 100); err != nil {
		t.Fatal(err)
	}
	step.Store("report circuit")
	for _, failed := range []bool{true, false} {
		if _, err := s.ReportCircuit(ctx, herald.CircuitReport{Route: "circuit", Lane: fmt.Sprintf("lane-%d-0", round), Failed: failed, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	step.Store("events")
	events, err := s.ClaimEvents(ctx, at, 100, at.Add(time.Minute))
	if err != nil || len(events) == 0 {
		t.Fatalf("ClaimEvents = %d events, %v", len(events), err)
	}
	for i, ev := range events {
		r := herald.EventResult{ID: ev.ID, Attempt: 1}
		switch i % 3 {
		case 0:
			r.Delivered = true
		case 1:
			r.RetryAt, r.Error = at.Add(time.Minute), "503"
		default:
			r.Dead, r.Error = true, "410"
		}
		if err := s.SettleEvent(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	step.Store("inbox")
	for i := range 3 {
		ev := herald.Inbound{ID: fmt.Sprintf("in-%d-%d", round, i), Route: "free", Kind: herald.InboundTransmitted,
			ExternalID: fmt.Sprintf("ext-%d", i), At: at, DueAt: at}
		if err := s.AddInbound(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	inbox, err := s.ClaimInbound(ctx, at, 10, at.Add(time.Minute))
	if err != nil || len(inbox) < 3 {
		t.Fatalf("ClaimInbound = %d events, %v", len(inbox), err)
	}
	if err := s.SettleInbound(ctx, herald.InboundSettle{Done: []string{inbox[0].ID}, Later: inbox[1].ID, DueAt: at.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	step.Store("pull")
	if _, err := s.Pull(ctx, herald.PullClaim{Route: "room:acme/r", Target: fmt.Sprint("sub-", round), Now: at, Limit: 10, Deadline: at.Add(time.Minute), Lease: 1}); err != nil {
		t.Fatal(err)
	}
	step.Store("prune")
	if _, err := s.Prune(ctx, at.Add(-time.Hour), 100); err != nil {
		t.Fatal(err)
	}
	step.Store("reads")
	reads(t, s, msgs, at)
	step.Store("claim again")
	claim.Now = at.Add(2 * time.Second)
	if _, err := s.Claim(ctx, claim); err != nil {
		t.Fatal(err)
	}
}

// reads reads msgs as the engine's loops and the API do with prepared
// statements (List builds its query for each call).
func reads(t *testing.T, s *Store, msgs []*herald.Message, at time.Time) {
	t.Helper()
	ctx := context.Background()
	for _, m := range msgs[:4] {
		if _, err := s.Get(ctx, m.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Lane(ctx, m.Route, m.Lane, m.Tenant); err != nil {
			t.Fatal(err)
		}
		if _, err := s.FirstActive(ctx, m.Route, m.Target); err != nil {
			t.Fatal(err)
		}
		if _, err := s.FindByExternalID(ctx, "free", "ext-"+m.ID); err != nil && !errors.Is(err, herald.ErrNotFound) {
			t.Fatal(err)
		}
		if _, err := s.InboundByCorrelation(ctx, m.Route, m.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Overdue(ctx, at.Add(time.Hour), 100); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lanes(ctx, herald.LaneQuery{Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ActiveRoutes(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rooms(ctx, msgs[0].Tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Subscriptions(ctx, msgs[0].Tenant, "lobby-"+msgs[0].ID); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkLaneTake measures a lane's take, the query a claim runs for
// each lane it takes from (500 lanes of 10 queued messages each, taken in
// turn): with its parameters in a unary plus, SQLite runs the prepared
// statement; without, it compiled it again on every call. On the 2-core
// VM (2026-11-25, -count 3): 6.4–7.1 µs a take, against 15.0–17.4 µs
// without the plus.
func BenchmarkLaneTake(b *testing.B) {
	s := open(b)
	defer s.Close()
	ctx := context.Background()
	if err := s.SetAdmission(ctx, map[string]herald.Admission{"r": {Concurrency: 2}}); err != nil {
		b.Fatal(err)
	}
	const lanes = 500
	for i := range 10 * lanes {
		m := testMessage(fmt.Sprintf("m%06d", i))
		m.Lane = fmt.Sprintf("lane-%03d", i%lanes)
		if _, _, err := s.Create(ctx, m, herald.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	now := time.Now().Add(time.Hour).UnixMilli()
	err := s.write(ctx, func(tx *wtx) error {
		i := 0
		for b.Loop() {
			rows, err := tx.st.laneTakeIDs.Query("r", fmt.Sprintf("lane-%03d", i%lanes), now, 20)
			ids, err := collect(rows, err, func(sc rowScanner) (string, error) {
				var id, tenant string
				return id, sc.Scan(&id, &tenant)
			})
			if err != nil || len(ids) != 10 {
				return fmt.Errorf("take: %d ids, %v", len(ids), err)
			}
			i++
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
