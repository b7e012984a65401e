package redis

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"
)

// Batching: the calls of one script that arrive while the server is busy
// with others go to it together, as one FCALL. Redis then pays once for
// what every call costs (the round trip, setting up Lua), and the batch's
// entries to one sorted set go in as one command. The batch is one call,
// so it is atomic as a whole; its calls are applied in order.
//
// When another batch of the script is at the server, a worker that has
// its first call yields once before it takes the others: the callers that
// the last reply woke are then quick to join, and the batch goes out no
// later than the server could start it anyway. (Without it, W2's creates
// went out in batches of 3.7, and cost Redis a tenth more.)
//
// Creates come in large batches, from few workers: their callers wait for
// nothing but their own write. Transitions come in small batches, from
// more workers, so that their results return in a steady stream rather
// than in bursts: the engine frees a claimed message's place in its
// dispatch window when the transition that records its send returns.

// batcher runs the calls of one script in batches. The script takes, for
// each call, the number of its arguments and then them, and replies with
// an array of one reply per call (see batch in lua/lib.lua).
type batcher struct {
	s        *Store
	script   script
	calls    chan *call
	max      int          // calls in one batch, at most
	inflight atomic.Int32 // batches at the server
}

// call is one call of a batched script.
type call struct {
	ctx  context.Context
	enc  *encoding
	res  any
	err  error
	done chan struct{}
}

// encoding is a call's arguments, and the bytes that they point into. The
// batcher recycles it once the server has read its batch, so that its
// memory serves the next call instead of the collector (a create's is a
// kilobyte, at tens of thousands a second).
type encoding struct {
	args []any
	buf  []byte
}

var encodings = sync.Pool{New: func() any { return new(encoding) }}

// newEncoding returns an empty encoding.
func newEncoding() *encoding {
	return encodings.Get().(*encoding)
}

// recycle empties e and returns it to the pool; nothing may use it after.
func (e *encoding) recycle() {
	clear(e.args)
	e.args, e.buf = e.args[:0], e.buf[:0]
	encodings.Put(e)
}

// newBatcher returns a batcher of sc that runs batches of up to max calls
// from workers goroutines (while one batch is at the server, the next one
// fills), until s closes.
func newBatcher(s *Store, sc script, workers, max int) *batcher {
	b := &batcher{s: s, script: sc, calls: make(chan *call), max: max}
	for range workers {
		s.workers.Go(b.work)
	}
	return b
}

// do runs the script for enc's arguments, within a batch, and returns the
// call's reply. The batcher recycles enc.
func (b *batcher) do(ctx context.Context, enc *encoding) (any, error) {
	c := &call{ctx: ctx, enc: enc, done: make(chan struct{})}
	select {
	case b.calls <- c:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.s.quit:
		return nil, goredis.ErrClosed
	}
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// work runs batches until the store closes: it waits for a call, takes
// every other call already waiting (after a yield, when another batch is
// at the server), and runs them.
func (b *batcher) work() {
	batch := make([]*call, 0, b.max)
	var args []any // the batch's FCALL, reused
	for {
		select {
		case c := <-b.calls:
			batch = append(batch[:0], c)
		case <-b.s.quit:
			return
		}
		if b.inflight.Load() > 0 {
			runtime.Gosched()
		}
	fill:
		for len(batch) < b.max {
			select {
			case c := <-b.calls:
				batch = append(batch, c)
			default:
				break fill
			}
		}
		b.inflight.Add(1)
		args = b.run(batch, args)
		b.inflight.Add(-1)
	}
}

// run runs one batch, leaving out the calls whose caller gave up, with
// args's memory for the FCALL's arguments; it returns args, emptied, to be
// reused.
func (b *batcher) run(batch []*call, args []any) []any {
	live := batch[:0]
	for _, c := range batch {
		if c.err = c.ctx.Err(); c.err != nil {
			c.enc.recycle()
			close(c.done)
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return args[:0]
	}
	args = b.s.fcallArgs(args[:0], b.script)
	for _, c := range live {
		args = append(args, len(c.enc.args))
		args = append(args, c.enc.args...)
	}
	res, err := b.s.fcall(context.Background(), args)
	clear(args)
	replies, _ := res.([]any)
	if err == nil && len(replies) != len(live) {
		err = fmt.Errorf("batch of %d calls: unexpected reply %v", len(live), res)
	}
	for i, c := range live {
		c.enc.recycle()
		switch {
		case err != nil:
			c.err = err
		case isCallError(replies[i]):
			c.err = fmt.Errorf("script error: %v", replies[i].([]any)[1])
		default:
			c.res = replies[i]
		}
		close(c.done)
	}
	return args[:0]
}

// isCallError reports whether a call's reply is {'ERR', text}: the call
// failed, not the batch.
func isCallError(reply any) bool {
	r, ok := reply.([]any)
	return ok && len(r) == 2 && r[0] == "ERR"
}
