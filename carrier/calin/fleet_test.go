package calin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	calinsim "github.com/heraldmq/herald/sim/calin"
	"github.com/heraldmq/herald/store/sqlite"
)

// timedPolls is a V1 carrier that records, for each task's first poll,
// how long after its time on the ladder (its DueAt) the poll began.
type timedPolls struct {
	*V1
	mu    sync.Mutex
	first map[string]time.Duration
}

func (c *timedPolls) Poll(ctx context.Context, m *herald.Message) (herald.PollResult, map[string]string, error) {
	behind := time.Since(m.DueAt)
	c.mu.Lock()
	if _, ok := c.first[m.ID]; !ok {
		c.first[m.ID] = behind
	}
	c.mu.Unlock()
	return c.V1.Poll(ctx, m)
}

// TestFleetPollsKeepToTheLadder: 2,000 tasks over 400 DCUs await a
// vendor (the simulator, over HTTP) that answers each poll in 200 ms;
// with poll_concurrency 256, every task's first poll begins within 2 s of
// its time on the ladder (10 s after its creation, +0-20 % jitter). The
// spread of those delays is logged.
func TestFleetPollsKeepToTheLadder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 2,000 tasks for about 20 s of wall time")
	}
	const tasks, dcus = 2000, 400
	sim := calinsim.New(calinsim.Config{API: calinsim.V1, Latency: time.Hour, SlowPoll: 200 * time.Millisecond})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	v1, err := NewV1(V1Config{BaseURL: srv.URL, Company: calinsim.DefaultCompany, Username: calinsim.DefaultUser,
		Password: calinsim.DefaultPassword, Client: client(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v1.Close() })
	c := &timedPolls{V1: v1, first: map[string]time.Duration{}}
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "herald.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, _ := herald.ProfilePolicy(herald.ProfileTaskPoll)
	p.PollConcurrency = 256
	eng, err := herald.New(herald.Config{Store: st, Routes: []herald.Route{{Name: "meters", Carrier: c, Policy: p}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		eng.Stop(ctx)
	})

	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < tasks; i += 8 {
				_, _, err := eng.Send(context.Background(), "acme", herald.SendRequest{Route: "meters", Target: fmt.Sprintf("47%09d", i),
					Lane: fmt.Sprintf("dcu-%d", i%dcus), Text: "read", Params: map[string]string{ParamCommand: CommandReading, ParamDataItem: "Voltage"}})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(time.Minute)
	for {
		c.mu.Lock()
		n := len(c.first)
		c.mu.Unlock()
		if n == tasks {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tasks polled within a minute", n, tasks)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.mu.Lock()
	behind := make([]time.Duration, 0, tasks)
	for _, d := range c.first {
		behind = append(behind, d)
	}
	c.mu.Unlock()
	slices.Sort(behind)
	q := func(f float64) time.Duration {
		return behind[min(len(behind)-1, int(f*float64(len(behind))))].Round(time.Millisecond)
	}
	t.Logf("first polls of %d tasks, after their time on the ladder: min %v, p50 %v, p90 %v, p99 %v, max %v",
		tasks, behind[0].Round(time.Millisecond), q(0.5), q(0.9), q(0.99), behind[len(behind)-1].Round(time.Millisecond))
	if worst := behind[len(behind)-1]; worst > 2*time.Second {
		t.Errorf("a first poll began %v after its time on the ladder, want within 2s", worst)
	}
	if n := len(sim.Tasks()); n != tasks {
		t.Errorf("%d tasks created, want %d", n, tasks)
	}
}
