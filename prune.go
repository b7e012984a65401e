package herald

import (
	"context"
	"time"
)

// pruneBatch bounds the messages, and the room events, deleted in one
// store call.
const pruneBatch = 1000

// pruneLoop deletes terminal messages and room events older than the
// retention, every PruneInterval on the engine's clock.
func (e *Engine) pruneLoop(ctx context.Context) {
	for {
		if _, err := e.Prune(ctx); err != nil && ctx.Err() == nil {
			e.problem("store_error", "pruner", "err", err)
		}
		if !e.sleep(ctx, e.cfg.PruneInterval) {
			return
		}
	}
}

// Prune deletes the terminal messages last updated, the room events
// published, and the ids of settled inbox events received, before now
// minus the retention, and returns how many it deleted.
func (e *Engine) Prune(ctx context.Context) (int, error) {
	before := e.clock.Now().Add(-e.cfg.Retention)
	total := 0
	for {
		n, err := e.store.Prune(ctx, before, pruneBatch)
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
		// A real millisecond, not the engine's clock's: the pause spaces
		// the store's work, and Prune is called from outside the loops too.
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}
