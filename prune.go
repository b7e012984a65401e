package herald

import (
	"context"
	"time"
)

// pruneBatch bounds the messages deleted in one store call.
const pruneBatch = 1000

// pruneLoop deletes terminal messages older than the retention, every PruneInterval.
func (e *Engine) pruneLoop(ctx context.Context) {
	for {
		if _, err := e.Prune(ctx); err != nil && ctx.Err() == nil {
			e.problem("store_error", "pruner", "err", err)
		}
		if !sleep(ctx, e.cfg.PruneInterval) {
			return
		}
	}
}

// Prune deletes the terminal messages last updated before now minus the
// retention, and returns how many it deleted.
func (e *Engine) Prune(ctx context.Context) (int, error) {
	before := e.clock.Now().Add(-e.cfg.Retention)
	total := 0
	for {
		n, err := e.store.Prune(ctx, before, pruneBatch)
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
		if !sleep(ctx, time.Millisecond) {
			return total, ctx.Err()
		}
	}
}
