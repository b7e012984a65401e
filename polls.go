package herald

import (
	"context"
	"errors"
	"sync"
	"time"
)

// DefaultPollConcurrency is how many polls of a route's tasks run at once
// when its policy sets no PollConcurrency.
const DefaultPollConcurrency = 16

// pollBatch bounds the due polls read at once.
const pollBatch = 1024

// pollLateAfter is how long after its time a poll may start before it is
// late: counted (problem poll_late) and logged, once a pass.
const pollLateAfter = 2 * time.Second

// pollLoop polls the pull carriers' tasks as their polls fall due, apart
// from the reaper, whose scans wait for their slowest call: as often as
// the dispatcher or the reaper looks (PollInterval, ReapInterval: the
// shorter), on the engine's clock, and at once when a poll ends, it reads
// the due polls, earliest first, and starts each whose route has a free
// poll slot (Policy.PollConcurrency) and whose lane one too (its
// admission's Concurrency: a DCU's tasks), without waiting for it.
func (e *Engine) pollLoop(ctx context.Context) {
	if len(e.pullRoutes) == 0 {
		return
	}
	e.batchLoopEvery(ctx, "poll", e.startPolls, pollBatch, e.pollPending, min(e.cfg.PollInterval, e.cfg.ReapInterval))
}

// startPolls starts the polls that are due and have a free slot, and
// returns how many it started.
func (e *Engine) startPolls(ctx context.Context) (int, error) {
	free := e.polls.free(e.pullRoutes)
	if free == 0 {
		return 0, nil // a poll that ends wakes the loop
	}
	now := e.clock.Now()
	due, err := e.store.DuePolls(ctx, now, min(free, pollBatch))
	if err != nil {
		return 0, err
	}
	started, late := 0, 0
	var latest time.Duration
	for _, m := range due {
		r, ok := e.route(m.Route)
		if !ok {
			e.deferOrphanPoll(ctx, m, now)
			continue
		}
		if !e.polls.take(m, r.Policy) {
			continue // a full route waits for a slot
		}
		started++
		if behind := now.Sub(m.DueAt); behind > pollLateAfter {
			late++
			latest = max(latest, behind)
			e.obs.Problem("poll_late")
		}
		e.spawn(func() {
			defer func() {
				e.polls.give(m)
				e.nudge(e.pollPending)
			}()
			e.poll(ctx, r, m)
		})
	}
	if late > 0 {
		e.log.Warn("polls started late: their routes' poll_concurrency is too low for the tasks awaiting them, or the vendor slow",
			"polls", late, "latest", latest, "kind", "poll_late")
	}
	return started, nil
}

// poll asks a pull carrier how its task is doing, once it has taken the
// poll (Store.ClaimPoll), so that one node polls a task: the task's DueAt
// moves twice the accept timeout on (a poll's bound, and its answer's
// write), when another node may poll it if this one died. A failed task
// is retried with the carrier's reason, or fails at once when that is
// permanent; a poll that errs is tried again at the next poll.
func (e *Engine) poll(ctx context.Context, r *route, m *Message) {
	p, ok := r.Carrier.(Poller)
	if !ok {
		return
	}
	hold := e.clock.Now().Add(2 * r.Policy.Timeouts.Accept)
	switch err := e.store.ClaimPoll(ctx, m.ID, m.Lease, m.DueAt, hold); {
	case errors.Is(err, ErrConflict), errors.Is(err, ErrNotFound):
		return // another node polls it, or the task moved on
	case err != nil:
		e.problem("store_error", "take a poll", "id", m.ID, "err", err)
		return
	}
	pollCtx, cancel := context.WithTimeout(ctx, r.Policy.Timeouts.Accept)
	pollCtx, end := e.startCall(pollCtx, CallPoll, m)
	res, result, err := p.Poll(pollCtx, m)
	cancel()
	now := e.clock.Now()
	t := Transition{From: m.Status, Lease: m.Lease, At: now, Deadline: m.Deadline}
	next := now.Add(r.Policy.NextPoll(false, now.Sub(m.CreatedAt), e.cfg.Random()))
	switch {
	case res == PollFailed:
		if err == nil {
			err = errors.New("carrier reports the task failed")
		}
		e.log.Info("task failed", "id", m.ID, "route", m.Route, "attempt", m.Attempt, "err", err)
		t = e.failure(r, m, err, "task failed")
	case err != nil:
		e.problem("carrier_error", "poll task", "id", m.ID, "err", err)
		t.To, t.DueAt, t.LastError = m.Status, next, err.Error()
	case res == PollSucceeded:
		t.To, t.Reason, t.Deadline, t.Result = StatusDeliverySuccessful, "task completed"+describeResult(result), time.Time{}, result
	default:
		t.To, t.DueAt = m.Status, next
	}
	end(pollCallOutcome(res, err, t), callStatus(m, t), err)
	if err := e.recordResult(ctx, m, t); err == nil {
		e.slotFreed(m, t)
	}
}

// pollGate counts the polls running on this node, by route and by lane,
// and the messages they poll.
type pollGate struct {
	mu     sync.Mutex
	routes map[string]int
	lanes  map[LaneRef]int
	ids    map[string]bool
}

// pollConcurrency is how many polls of a route of policy p run at once.
func pollConcurrency(p Policy) int {
	if p.PollConcurrency > 0 {
		return p.PollConcurrency
	}
	return DefaultPollConcurrency
}

// free returns how many more polls of routes may start now.
func (g *pollGate) free(routes []*route) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, r := range routes {
		n += max(0, pollConcurrency(r.Policy)-g.routes[r.Name])
	}
	return n
}

// take counts a poll of m, of a route of policy p, as running, unless m
// is polled already or its route or its lane has no free slot: then it
// reports false.
func (g *pollGate) take(m *Message, p Policy) bool {
	lane := LaneRef{m.Route, m.Lane}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ids[m.ID] || g.routes[m.Route] >= pollConcurrency(p) || (p.Admission.Concurrency > 0 && g.lanes[lane] >= p.Admission.Concurrency) {
		return false
	}
	if g.ids == nil {
		g.routes, g.lanes, g.ids = map[string]int{}, map[LaneRef]int{}, map[string]bool{}
	}
	g.routes[m.Route]++
	g.lanes[lane]++
	g.ids[m.ID] = true
	return true
}

// give counts the poll of m, which take counted, as ended.
func (g *pollGate) give(m *Message) {
	lane := LaneRef{m.Route, m.Lane}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.routes[m.Route]--; g.routes[m.Route] == 0 {
		delete(g.routes, m.Route)
	}
	if g.lanes[lane]--; g.lanes[lane] == 0 {
		delete(g.lanes, lane)
	}
	delete(g.ids, m.ID)
}

// deferOrphanPoll moves the poll of m, a task of a route missing from the
// configuration (an orphan, holds.go), orphanRecheck on: it waits for its
// route without staying among the due polls, whose batches it would fill
// ahead of other routes' polls.
func (e *Engine) deferOrphanPoll(ctx context.Context, m *Message, now time.Time) {
	e.record(ctx, m, Transition{From: m.Status, To: m.Status, Lease: m.Lease, At: now,
		Deadline: m.Deadline, DueAt: now.Add(orphanRecheck)})
}
