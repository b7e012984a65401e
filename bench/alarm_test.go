package bench

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestAlarmEndsEveryWaitAfterItsLength(t *testing.T) {
	const length = 5 * time.Millisecond
	a := newAlarm(length)
	defer a.close()
	var wg sync.WaitGroup
	for range 3 { // rounds: the sleeper goes idle between them
		for range 20 {
			wg.Go(func() {
				start := time.Now()
				if err := a.wait(context.Background()); err != nil {
					t.Error(err)
				}
				if took := time.Since(start); took < length {
					t.Errorf("wait ended after %v, before its %v", took, length)
				}
			})
			time.Sleep(100 * time.Microsecond)
		}
		wg.Wait()
	}
}

func TestAlarmWaitEndsWithItsContext(t *testing.T) {
	a := newAlarm(time.Hour)
	defer a.close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := a.wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait = %v, want the context's deadline", err)
	}
}
