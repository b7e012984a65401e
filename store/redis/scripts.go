package redis

import (
	"context"
	"crypto/sha256"
	"embed"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The store's scripts are the functions of one Redis function library:
// lua/lib.lua, which runs once, when the library loads, and then each other
// file of lua/ as the function of its name. (A script run by EVALSHA would
// run lib.lua at every call: a fifth of what a batch of creates costs.)
//
// The library's name holds a hash of its code, so that herald versions
// sharing a server each call their own. A server that lacks it (new,
// restarted without persistence, flushed, a cluster node that took the
// slot over) gets it at the first call that fails for want of it.
var libraryName, libraryCode = library()

var (
	createScript       = function("create")
	claimScript        = function("claim")
	transitionScript   = function("transition")
	releaseScript      = function("release")
	claimPollScript    = function("claim_poll")
	overdueScript      = function("overdue")
	duePollsScript     = function("due_polls")
	countsScript       = function("counts")
	pruneScript        = function("prune")
	purgeScript        = function("purge")
	claimEventsScript  = function("claim_events")
	settleEventScript  = function("settle_event")
	deadEventsScript   = function("dead_events")
	replayEventsScript = function("replay_events")
	admissionScript    = function("admission")
	circuitScript      = function("circuit")
	recountScript      = function("recount")
	heartbeatScript    = function("heartbeat")

	addInboundScript    = function("add_inbound")
	claimInboundScript  = function("claim_inbound")
	inboundByCorrScript = function("inbound_by_corr")
	settleInboundScript = function("settle_inbound")

	createRoomScript = function("create_room")
	deleteRoomScript = function("delete_room")
	createSubScript  = function("create_sub")
	deleteSubScript  = function("delete_sub")
	publishScript    = function("publish")
	pullScript       = function("pull")
)

// script is a function of the library, by the name the server knows it by.
type script string

// function returns the script of lua/<file>.lua.
func function(file string) script {
	return script(libraryName + "_" + file)
}

// library returns the library's name and code: lib.lua, then each other
// file of lua/ registered as a function that starts with enter. The name
// holds a hash of the code it names.
func library() (name, code string) {
	files, err := luaFiles.ReadDir("lua") // in name order
	if err != nil {
		panic(err)
	}
	const placeholder = "herald_NAME"
	var lib, functions strings.Builder
	for _, f := range files {
		b, err := luaFiles.ReadFile("lua/" + f.Name())
		if err != nil {
			panic(err)
		}
		if f.Name() == "lib.lua" {
			lib.Write(b)
			continue
		}
		fmt.Fprintf(&functions, "redis.register_function('%s_%s', function(keys, args)\nenter(keys, args)\n%s\nend)\n",
			placeholder, strings.TrimSuffix(f.Name(), ".lua"), b)
	}
	code = "#!lua name=" + placeholder + "\n" + lib.String() + "\n" + functions.String()
	name = fmt.Sprintf("herald_%x", sha256.Sum256([]byte(code)))[:len("herald_")+12]
	return name, strings.ReplaceAll(code, placeholder, name)
}

// eval calls sc with the store's keys and args, loading the library first
// when the server lacks it.
func (s *Store) eval(ctx context.Context, sc script, args ...any) (any, error) {
	return s.fcall(ctx, append(s.fcallArgs(make([]any, 0, 4+len(args)), sc), args...))
}

// fcallArgs appends to dst the arguments of an FCALL of sc that come
// before sc's own.
func (s *Store) fcallArgs(dst []any, sc script) []any {
	return append(dst, "fcall", string(sc), 1, s.keys[0])
}

// fcall runs args, an FCALL's arguments from fcallArgs on, loading the
// library first when the server lacks it.
func (s *Store) fcall(ctx context.Context, args []any) (any, error) {
	run := func() (any, error) {
		cmd := goredis.NewCmd(ctx, args...)
		cmd.SetFirstKeyPos(3)
		_ = s.client.Process(ctx, cmd)
		return cmd.Result()
	}
	res, err := run()
	switch {
	case err == nil:
		return res, nil
	case strings.HasPrefix(err.Error(), "ERR unknown command"):
		return nil, fmt.Errorf("herald needs Redis 7.0 or later, for functions: %w", err)
	case !strings.HasPrefix(err.Error(), "ERR Function not found"):
		return res, err
	}
	if err := s.loadLibrary(ctx); err != nil {
		return nil, err
	}
	return run()
}

// loadLibrary loads the library on the server, or on every primary of a
// cluster. It replaces a library of the same name, which has the same code.
func (s *Store) loadLibrary(ctx context.Context) error {
	load := func(ctx context.Context, c goredis.Cmdable) error {
		return c.FunctionLoadReplace(ctx, libraryCode).Err()
	}
	if c, ok := s.client.(*goredis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return load(ctx, c) })
	}
	return load(ctx, s.client)
}

// evalCount runs sc, a script that moves or deletes up to limit messages
// due by at, and returns how many it did; a limit of 0 or less does nothing.
func (s *Store) evalCount(ctx context.Context, op string, sc script, at time.Time, limit int) (int, error) {
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
