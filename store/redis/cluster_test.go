package redis

import (
	"context"
	"errors"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/redistest"
	"github.com/heraldmq/herald/store/storetest"
)

// TestRedisCluster runs the suite on a one-node cluster, through the
// cluster client: Redis Cluster refuses a script or transaction that
// touches keys of two slots, declared or not.
func TestRedisCluster(t *testing.T) {
	srv := redistest.Start(t, redistest.Cluster())
	storetest.Exercise(t, func(t *testing.T) herald.Store { return open(t, srv, "&cluster=true") })
}

// TestOneSlot calls every method, recording the keys that each script
// declares, then checks that they and every key the store made hash to
// the slot of its prefix.
func TestOneSlot(t *testing.T) {
	srv := redistest.Start(t, redistest.Cluster())
	s := open(t, srv, "&cluster=true")
	var declared []string
	s.client.AddHook(keysHook{func(keys []string) { declared = append(declared, keys...) }})
	seed(t, s)
	for _, c := range everyMethod {
		if err := c.call(t.Context(), s); err != nil && !errors.Is(err, herald.ErrNotFound) {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	if len(declared) == 0 {
		t.Fatal("no script ran")
	}

	admin := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer admin.Close()
	ctx := t.Context()
	want, err := admin.ClusterKeySlot(ctx, s.keys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	made, err := admin.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(made) < 10 {
		t.Fatalf("the store made only %d keys: %v", len(made), made)
	}
	for _, k := range append(declared, made...) {
		if slot, err := admin.ClusterKeySlot(ctx, k).Result(); err != nil || slot != want {
			t.Errorf("key %q: slot %d, %v; want %d, the prefix's", k, slot, err, want)
		}
	}
}

// keysHook reports the keys of every script a client runs.
type keysHook struct{ report func(keys []string) }

func (h keysHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h keysHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.scriptKeys(cmd)
		return next(ctx, cmd)
	}
}

func (h keysHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, cmd := range cmds {
			h.scriptKeys(cmd)
		}
		return next(ctx, cmds)
	}
}

// scriptKeys reports the keys of cmd when it runs a script or function:
// EVAL, EVALSHA or FCALL script numkeys key...
func (h keysHook) scriptKeys(cmd goredis.Cmder) {
	args := cmd.Args()
	switch cmd.Name() {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
	default:
		return
	}
	n, ok := args[2].(int)
	if !ok || len(args) < 3+n {
		return
	}
	keys := make([]string, n)
	for i := range n {
		keys[i], _ = args[3+i].(string)
	}
	h.report(keys)
}
