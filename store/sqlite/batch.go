package sqlite

import (
	"context"
	"errors"
	"runtime"

	"github.com/heraldmq/herald"
)

const (
	// maxBatch bounds how many requests share one transaction.
	maxBatch = 256
	// pipelineDepth is how many committed batches may wait for their fsync:
	// one being synced and one ready for the next sync.
	pipelineDepth = 2
)

// maxGroup bounds how many transitions one statement applies (see
// applyTransitions). Beyond about a hundred rows of VALUES, SQLite plans
// the grouped UPDATE as a scan of the messages (TestPlans checks the
// largest group), and per transition 64 is as fast as more.
const maxGroup = 64

// request is one write waiting for the writer.
type request struct {
	ctx context.Context
	run func(tx *wtx) error
	// tr, when set, is the transition that run applies: the writer may
	// apply it with the other transitions waiting beside it instead.
	tr   *herald.Transition
	err  error
	done chan struct{} // closed once err is final
}

// loop applies each request as it arrives, inside the open transaction,
// and commits that transaction once no request is waiting (or it holds
// maxBatch) and a permit says the syncer can take the batch. The requests
// that arrive while the syncer is busy thus share the next commit and its
// fsync. Before it decides that no request is waiting, the writer yields
// once (runtime.Gosched): the callers a sync has just answered are
// runnable, mostly about to write again, and so join this batch rather
// than the next.
//
// Transitions that arrive one after another are gathered into a group,
// applied together (applyTransitions) when another kind of request comes,
// when the group is full or when no request is waiting: the batch still
// applies its requests as if one after another, in order of arrival.
func (w *writer) loop() {
	defer close(w.sync)
	var (
		batch   []*request // applied in the open transaction
		group   []*request // transitions received, not yet applied
		yielded bool       // since the last request arrived
	)
	reqs := w.reqs
	for reqs != nil || len(batch) > 0 || len(group) > 0 {
		in := reqs
		if len(batch)+len(group) >= maxBatch {
			in = nil
		}
		var (
			r  *request
			ok bool
		)
		select { // a request already waiting goes first
		case r, ok = <-in:
		default:
			if len(group) > 0 {
				batch = w.applyTransitions(batch, group)
				group = nil
				continue
			}
			if len(batch) > 0 && !yielded {
				yielded = true
				runtime.Gosched()
				continue
			}
			permits := w.permits
			if len(batch) == 0 {
				permits = nil
			}
			select {
			case r, ok = <-in:
			case <-permits:
				w.sync <- w.commit(batch)
				batch = nil
				continue
			}
		}
		if !ok {
			reqs = nil
			continue
		}
		yielded = false
		if r.tr != nil {
			if group = append(group, r); len(group) >= maxGroup {
				batch = w.applyTransitions(batch, group)
				group = nil
			}
			continue
		}
		if len(group) > 0 {
			batch = w.applyTransitions(batch, group)
			group = nil
		}
		batch = w.apply(batch, r)
	}
}

// apply runs r in the open transaction, beginning one for the first
// request of a batch, and returns the batch with r. A request whose
// context has ended is not run; one that fails with anything but a
// per-request outcome (ErrConflict, ErrNotFound) is answered at once, and
// the transaction, which it may have left half done, is rolled back and
// the batch run again without it.
func (w *writer) apply(batch []*request, r *request) []*request {
	if len(batch) == 0 {
		if _, err := w.tx.st.begin.Exec(); err != nil {
			r.err = err
			close(r.done)
			return nil
		}
	}
	if r.err = r.ctx.Err(); r.err != nil {
		return append(batch, r)
	}
	if r.err = r.run(w.tx); r.err == nil || isOutcome(r.err) {
		return append(batch, r)
	}
	w.rollback()
	close(r.done)
	return w.reapply(batch)
}

// reapply runs the requests of batch again, one by one, in a new
// transaction, and returns the batch of those that did not fail.
func (w *writer) reapply(batch []*request) []*request {
	var again []*request
	for _, r := range batch {
		again = w.apply(again, r)
	}
	return again
}

// applyTransitions applies the transition requests of group, in this
// order, and returns the batch with them: it has the effect of apply for
// each in turn, with one statement for as many as it can. The first
// transition of each message goes in the first statement, the second of
// each in the next, and so on, so that transitions of the same message
// still apply one after the other.
func (w *writer) applyTransitions(batch, group []*request) []*request {
	if len(group) == 1 {
		return w.apply(batch, group[0])
	}
	for len(group) > 0 {
		var now, later []*request
		seen := make(map[string]struct{}, len(group))
		for _, r := range group {
			if _, dup := seen[r.tr.ID]; dup {
				later = append(later, r)
				continue
			}
			seen[r.tr.ID] = struct{}{}
			now = append(now, r)
		}
		batch = w.applyDistinct(batch, now)
		group = later
	}
	return batch
}

// applyDistinct applies transition requests of distinct messages with one
// statement and returns the batch with them. When that fails, the
// transaction is rolled back and the batch run again, followed by each of
// group alone, so that only the request that fails is answered with its
// error.
func (w *writer) applyDistinct(batch, group []*request) []*request {
	live := make([]*request, 0, len(group))
	for _, r := range group {
		if r.ctx.Err() != nil {
			batch = w.apply(batch, r) // not run: answered with its ctx's error
		} else {
			live = append(live, r)
		}
	}
	if len(live) < 2 {
		for _, r := range live {
			batch = w.apply(batch, r)
		}
		return batch
	}
	if len(batch) == 0 {
		if _, err := w.tx.st.begin.Exec(); err != nil {
			answer(live, err)
			return nil
		}
	}
	ts := make([]*herald.Transition, len(live))
	for i, r := range live {
		ts[i] = r.tr
	}
	outcomes, err := w.tx.transitions(ts)
	if err != nil {
		w.rollback()
		return w.reapply(append(batch, live...))
	}
	for i, r := range live {
		r.err = outcomes[i]
	}
	return append(batch, live...)
}

// commit commits the open transaction and returns the batch for the
// syncer. When the commit fails, it answers the batch with the error and
// returns nil.
func (w *writer) commit(batch []*request) []*request {
	if _, err := w.tx.st.commit.Exec(); err != nil {
		w.rollback()
		answer(batch, err)
		return nil
	}
	w.tx.kept.committed()
	w.tx.publishOrphans()
	return batch
}

// rollback ends the open transaction, SQLite may have ended it already,
// and undoes what it changed in the writer's memory.
func (w *writer) rollback() {
	_, _ = w.tx.st.rollback.Exec()
	w.tx.kept.rolledBack()
}

// isOutcome reports whether err is a request's answer rather than a failure:
// such a request changed nothing and the transaction goes on.
func isOutcome(err error) bool {
	return errors.Is(err, herald.ErrConflict) || errors.Is(err, herald.ErrNotFound)
}

// syncer takes each committed batch in turn, fsyncs the WAL file when the
// store is durable, answers the batch's requests and gives its permit back,
// so that the writer commits the next batch while this one syncs.
func (w *writer) syncer() {
	defer close(w.done)
	for batch := range w.sync {
		var err error
		if w.wal != nil {
			err = syncData(w.wal)
		}
		answer(batch, err)
		w.permits <- struct{}{}
	}
}

// answer ends the requests of batch, with err when it is not nil.
func answer(batch []*request, err error) {
	for _, r := range batch {
		if err != nil {
			r.err = err
		}
		close(r.done)
	}
}
