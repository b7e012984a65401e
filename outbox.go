package herald

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// eventLease is how long a claimed outcome event is hidden from other
// claims; a node that dies mid-delivery leaves it to be retried after that.
const eventLease = 30 * time.Second

// eventBatch bounds the events claimed at once.
const eventBatch = 100

// outboxLoop delivers outcome events to subscribers when woken by a new
// event or the poll interval (on the engine's clock).
func (e *Engine) outboxLoop(ctx context.Context) {
	if len(e.subscribers) == 0 {
		return
	}
	e.batchLoop(ctx, "outbox", e.deliverEvents, eventBatch, e.eventPending)
}

// batchLoop runs work, which handles up to batch items of a store's queue
// and says how many it took, again at once while it finds full batches,
// else when woken through pending or after the poll interval (on the
// engine's clock); a store error backs off. It returns when ctx ends.
func (e *Engine) batchLoop(ctx context.Context, name string, work func(context.Context) (int, error), batch int, pending chan struct{}) {
	e.batchLoopEvery(ctx, name, work, batch, pending, e.cfg.PollInterval)
}

// batchLoopEvery is batchLoop looking every interval.
func (e *Engine) batchLoopEvery(ctx context.Context, name string, work func(context.Context) (int, error), batch int, pending chan struct{}, interval time.Duration) {
	poll := e.newAlarm(interval)
	defer func() { poll.stop() }()
	failures := 0
	for {
		n, err := work(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			failures++
			e.problem("store_error", name, "err", err)
			if !e.sleep(ctx, backoff(failures)) {
				return
			}
			continue
		case n == batch:
			continue
		}
		failures = 0
		e.park()
		select {
		case <-ctx.Done():
			e.unpark()
			return
		case <-pending:
		case <-poll.c:
			poll = e.newAlarm(interval)
		}
	}
}

// deliverEvents claims the due outcome events and delivers them, one
// goroutine each. It returns how many it claimed.
func (e *Engine) deliverEvents(ctx context.Context) (int, error) {
	if len(e.subscribers) == 0 {
		return 0, nil
	}
	now := e.clock.Now()
	events, err := e.store.ClaimEvents(ctx, now, eventBatch, now.Add(eventLease))
	if err != nil {
		return 0, err
	}
	done := make(chan struct{}, len(events))
	for _, ev := range events {
		go func() {
			e.deliverEvent(ctx, ev)
			done <- struct{}{}
		}()
	}
	for range events {
		<-done
	}
	return len(events), nil
}

func (e *Engine) deliverEvent(ctx context.Context, ev Event) {
	sub, ok := e.subscriber(ev.Subscriber)
	res := EventResult{ID: ev.ID, Attempt: ev.Attempt + 1}
	var err error
	if !ok {
		err = Permanent(errors.New("subscriber " + ev.Subscriber + " is no longer configured"))
	} else {
		err = e.sendEvent(ctx, sub, ev)
	}
	now := e.clock.Now()
	switch {
	case err == nil:
		res.Delivered = true
	case isPermanent(err) || res.Attempt >= sub.MaxAttempts:
		res.Dead, res.Error = true, err.Error()
		e.problem("event_dead", "outcome event dead-lettered", "event", ev.ID, "subscriber", ev.Subscriber, "message", ev.MessageID, "attempts", res.Attempt, "err", err)
	default:
		res.RetryAt, res.Error = now.Add(max(sub.Retry.Delay(res.Attempt, e.cfg.Random()), retryAfter(err))), err.Error()
		e.problem("event_retry", "outcome event failed", "event", ev.ID, "subscriber", ev.Subscriber, "attempt", res.Attempt, "err", err)
	}
	if err := e.store.SettleEvent(ctx, res); err != nil {
		e.problem("store_error", "settle outcome event", "event", ev.ID, "err", err)
	}
}

func (e *Engine) sendEvent(ctx context.Context, sub Subscriber, ev Event) error {
	if ev.MessageID == "" { // about no message: a lane event, an uplink or a message to herald
		out := OutcomeEvent{ID: ev.ID, Type: ev.Type, At: ev.At.UTC()}
		if isLaneEvent(ev.Type) {
			out.Lane = &LaneEventView{}
			if err := json.Unmarshal(ev.Data, out.Lane); err != nil {
				return Permanent(fmt.Errorf("lane event %s: %w", ev.ID, err))
			}
		} else if ev.Type == EventLXMFMessage {
			out.LXMF = ev.Data
		} else {
			out.Uplink = ev.Data
		}
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		return sub.Sink.Deliver(ctx, out)
	}
	m, err := e.store.Get(ctx, ev.MessageID)
	if errors.Is(err, ErrNotFound) {
		return Permanent(errors.New("message " + ev.MessageID + " no longer exists"))
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	view := m.View()
	return sub.Sink.Deliver(ctx, OutcomeEvent{ID: ev.ID, Type: ev.Type, At: ev.At.UTC(), Message: &view})
}

func (e *Engine) subscriber(name string) (Subscriber, bool) {
	for _, s := range e.subscribers {
		if s.Name == name {
			return s, true
		}
	}
	return Subscriber{}, false
}

func isPermanent(err error) bool {
	var pe *PermanentError
	return errors.As(err, &pe)
}
