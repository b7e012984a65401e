package herald

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrStoreFull is returned, wrapped, when the store refuses a write for
// want of room (a full disk: SQLITE_FULL, ENOSPC; Redis out of memory). It
// is an ErrStoreUnavailable: the write may be tried again later.
var ErrStoreFull = fmt.Errorf("store full: %w", ErrStoreUnavailable)

// fullFor is how long a store that refused a write for want of room is
// taken for full when no write has been tried since: a node that is not
// ready gets no sends, and only a write tells that room was made.
const fullFor = 15 * time.Second

// fullWatch remembers that the store refused a write for want of room,
// until a write succeeds (or fullFor passes without another refusal): the
// engine is then not Ready and its Health is critical.
type fullWatch struct {
	full   atomic.Bool // reason is set: read without the lock by every write that succeeds
	mu     sync.Mutex
	reason string    // the last refusal's error; "" when not full
	at     time.Time // the last refusal
}

// note records the outcome of a write: a refusal for want of room marks
// the store full, logged and counted on the first; a success clears it.
func (e *Engine) noteWrite(err error) {
	w := &e.full
	switch {
	case errors.Is(err, ErrStoreFull):
		w.mu.Lock()
		first := w.reason == ""
		w.reason, w.at = err.Error(), e.clock.Now()
		w.full.Store(true)
		w.mu.Unlock()
		if first {
			e.problem("store_full", "the store refuses writes for want of room (a full disk, or Redis out of memory): answering 503 until a write succeeds", "err", err)
		}
	case err == nil && w.full.Load(): // a success clears a full store; the others pass by
		w.mu.Lock()
		was := w.reason != ""
		w.reason = ""
		w.full.Store(false)
		w.mu.Unlock()
		if was {
			e.log.Info("the store takes writes again")
		}
	}
}

// storeFull returns why the store refuses writes, "" when it does not.
func (e *Engine) storeFull() string {
	w := &e.full
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reason != "" && e.clock.Now().Sub(w.at) > fullFor {
		w.reason = ""
		w.full.Store(false)
	}
	return w.reason
}

// watchedStore is the engine's store with its writes' outcomes noted
// (noteWrite): a message's creation and its transitions, the writes every
// running engine makes.
type watchedStore struct {
	Store
	e *Engine
}

func (s watchedStore) Create(ctx context.Context, m *Message, opt CreateOptions) (*Message, bool, error) {
	stored, created, err := s.Store.Create(ctx, m, opt)
	s.e.noteWrite(err)
	return stored, created, err
}

func (s watchedStore) Transition(ctx context.Context, t Transition) error {
	err := s.Store.Transition(ctx, t)
	if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotFound) {
		s.e.noteWrite(err)
	}
	return err
}
