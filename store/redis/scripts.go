package redis

import (
	"context"
	"embed"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The store's scripts, each lua/lib.lua followed by the file of its name.
// They run with EVALSHA, and with EVAL when the server has not seen them
// yet (a new or restarted server).
var (
	createScript      = script("create")
	claimScript       = script("claim")
	transitionScript  = script("transition")
	releaseScript     = script("release")
	overdueScript     = script("overdue")
	countsScript      = script("counts")
	pruneScript       = script("prune")
	purgeScript       = script("purge")
	claimEventsScript = script("claim_events")
	settleEventScript = script("settle_event")
)

// script returns lib.lua and lua/<name>.lua as one script.
func script(name string) *goredis.Script {
	lib, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		panic(err)
	}
	body, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return goredis.NewScript(string(lib) + "\n" + string(body))
}

// eval runs sc with the store's keys and args.
func (s *Store) eval(ctx context.Context, sc *goredis.Script, args ...any) (any, error) {
	return sc.Run(ctx, s.client, s.keys, args...).Result()
}

// evalCount runs sc, a script that moves or deletes up to limit messages
// due by at, and returns how many it did; a limit of 0 or less does nothing.
func (s *Store) evalCount(ctx context.Context, op string, sc *goredis.Script, at time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	res, err := s.eval(ctx, sc, unixms.From(at), limit)
	if err != nil {
		return 0, wrap(ctx, op, err)
	}
	return count(op, res)
}

// outcome turns the reply of a script that changes one message or event
// into its error: 0 when it applied, 1 when there is no such record
// (ErrNotFound), 2 when the record was not in the expected state
// (ErrConflict).
func outcome(op string, reply any) error {
	switch reply {
	case int64(0):
		return nil
	case int64(1):
		return herald.ErrNotFound
	case int64(2):
		return herald.ErrConflict
	default:
		return fmt.Errorf("redis %s: unexpected reply %v", op, reply)
	}
}
