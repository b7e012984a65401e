package sqlite

import (
	"context"
	"errors"

	"github.com/heraldmq/herald"
)

const (
	// maxBatch bounds how many requests share one transaction.
	maxBatch = 256
	// pipelineDepth is how many committed batches may wait for their fsync:
	// one being synced and one ready for the next sync.
	pipelineDepth = 2
)

// request is one write waiting for the writer.
type request struct {
	ctx  context.Context
	run  func(tx *wtx) error
	err  error
	done chan struct{} // closed once err is final
}

// loop applies each request as it arrives, inside the open transaction,
// and commits that transaction once no request is waiting (or it holds
// maxBatch) and a permit says the syncer can take the batch. The requests
// that arrive while the syncer is busy thus share the next commit and its
// fsync.
func (w *writer) loop() {
	defer close(w.sync)
	var batch []*request // applied in the open transaction
	reqs := w.reqs
	for reqs != nil || len(batch) > 0 {
		in, permits := reqs, w.permits
		if len(batch) >= maxBatch {
			in = nil
		}
		if len(batch) == 0 {
			permits = nil
		}
		var (
			r  *request
			ok bool
		)
		select { // a request already waiting goes first
		case r, ok = <-in:
		default:
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
	var again []*request
	for _, r := range batch {
		again = w.apply(again, r)
	}
	return again
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
	return batch
}

// rollback ends the open transaction; SQLite may have ended it already.
func (w *writer) rollback() {
	_, _ = w.tx.st.rollback.Exec()
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
