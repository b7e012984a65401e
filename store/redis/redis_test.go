package redis

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/redistest"
	"github.com/heraldmq/herald/store/storetest"
)

// TestMain silences go-redis, which logs every failed dial of the outage
// tests.
func TestMain(m *testing.M) {
	goredis.SetLogger(&logging.VoidLogger{})
	m.Run()
}

// prefixes numbers the key prefixes of the tests' stores: each store of a
// server has keys of its own.
var prefixes atomic.Int64

// open returns a Store on srv with a prefix of its own and the extra URL
// query options opts ("&name=value..."), its lanes on the callers' clock
// (the tests' times are fake). The test closes it.
func open(tb testing.TB, srv *redistest.Server, opts string) *Store {
	tb.Helper()
	s, err := Open(fmt.Sprintf("%s?prefix=t%d&lane_clock=caller%s", srv.URL(), prefixes.Add(1), opts))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func TestRedis(t *testing.T) {
	srv := redistest.Start(t)
	storetest.Exercise(t, func(t *testing.T) herald.Store { return open(t, srv, "") })
}

func BenchmarkRedis(b *testing.B) {
	srv := redistest.Start(b)
	storetest.Benchmark(b, func(b *testing.B) herald.Store { return open(b, srv, "") })
}

// t0 is the tests' epoch.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// message returns a message of route r1 with id, ready for Create.
func message(id string) *herald.Message {
	return &herald.Message{
		ID: id, Tenant: "acme", Route: "r1", Target: "device-1", Text: "hello", MaxAttempts: 5,
		CreatedAt: t0, UpdatedAt: t0, DueAt: t0,
	}
}

// TestLateCompletionRefused plays a claim whose lease ran out: the reaper
// retries the message, another claim takes it, and the first claimant's
// late answer must change nothing.
func TestLateCompletionRefused(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	ctx := t.Context()
	if _, _, err := s.Create(ctx, message("m1"), herald.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim := func(now time.Time) *herald.Message {
		t.Helper()
		got, err := s.Claim(ctx, herald.Claim{Now: now, Limit: 1, DefaultAccept: 20 * time.Second})
		if err != nil || len(got) != 1 {
			t.Fatalf("Claim = %v, %v; want the message", got, err)
		}
		return got[0]
	}
	first := claim(t0)

	// The reaper, past the deadline: it retries the message under the lease
	// it read, and the retry is released.
	now := t0.Add(time.Minute)
	overdue, err := s.Overdue(ctx, now, 10)
	if err != nil || len(overdue) != 1 {
		t.Fatalf("Overdue = %v, %v; want the message", overdue, err)
	}
	err = s.Transition(ctx, herald.Transition{ID: "m1", From: herald.StatusSentToNS, To: herald.StatusToRetry,
		Lease: overdue[0].Lease, At: now, DueAt: now, Reason: "accept timeout"})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.Release(ctx, now, 10); err != nil || n != 1 {
		t.Fatalf("Release = %d, %v; want 1", n, err)
	}
	second := claim(now)
	if second.Lease == first.Lease || second.Attempt != 2 {
		t.Fatalf("second claim: lease %d attempt %d, want a lease other than %d and attempt 2", second.Lease, second.Attempt, first.Lease)
	}

	late := herald.Transition{ID: "m1", From: herald.StatusSentToNS, To: herald.StatusDeliverySuccessful,
		Lease: first.Lease, At: now.Add(time.Second), Reason: "accepted", Notify: []string{"hook"}}
	if err := s.Transition(ctx, late); !errors.Is(err, herald.ErrConflict) {
		t.Fatalf("late completion under the old lease: err %v, want ErrConflict", err)
	}
	got, err := s.Get(ctx, "m1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != herald.StatusSentToNS || got.Lease != second.Lease || got.Timeline[len(got.Timeline)-1].To != herald.StatusSentToNS {
		t.Errorf("after the late completion: status %s lease %d timeline %+v; want SENT_TO_NS under lease %d, unchanged",
			got.Status, got.Lease, got.Timeline, second.Lease)
	}
	if evs, err := s.ClaimEvents(ctx, now.Add(time.Hour), 10, now.Add(2*time.Hour)); err != nil || len(evs) != 0 {
		t.Errorf("ClaimEvents = %v, %v; want no event from the refused completion", evs, err)
	}

	current := late
	current.Lease = second.Lease
	if err := s.Transition(ctx, current); err != nil {
		t.Errorf("completion under the current lease: %v", err)
	}
}

// TestLibraryLoadedWhenMissing flushes the server's functions between two
// calls, as a restart without persistence would: the second call loads the
// library again and succeeds, on a server and on a cluster.
func TestLibraryLoadedWhenMissing(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []redistest.Option
		url  string
	}{
		{"server", nil, ""},
		{"cluster", []redistest.Option{redistest.Cluster()}, "&cluster=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t, tc.opts...)
			s := open(t, srv, tc.url)
			ctx := t.Context()
			if _, _, err := s.Create(ctx, message("m1"), herald.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			admin := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
			defer admin.Close()
			if err := admin.FunctionFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Create(ctx, message("m2"), herald.CreateOptions{}); err != nil {
				t.Fatalf("Create after FUNCTION FLUSH: %v", err)
			}
			if got, err := s.Claim(ctx, herald.Claim{Now: t0, Limit: 10, DefaultAccept: time.Minute}); err != nil || len(got) != 2 {
				t.Fatalf("Claim after FUNCTION FLUSH = %d messages, %v; want both", len(got), err)
			}
		})
	}
}

// TestConcurrentCreatesKeepTheirBytes creates messages from many goroutines,
// some of which give up mid-call, and reads each stored one back: the
// batcher recycles a call's encoding, so a buffer reused too soon would
// show as another message's payload.
func TestConcurrentCreatesKeepTheirBytes(t *testing.T) {
	s := open(t, redistest.Start(t), "")
	var stored sync.Map // id -> payload
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 100 {
				m := message(fmt.Sprintf("g%d-%d", g, i))
				m.Text, m.Payload = "", []byte(strings.Repeat(m.ID, 1+i%40))
				ctx, cancel := context.WithCancel(t.Context())
				if i%7 == 3 {
					cancel() // the call may be dropped before, or answered after, its caller gives up
				}
				if _, created, err := s.Create(ctx, m, herald.CreateOptions{}); err == nil && created {
					stored.Store(m.ID, m.Payload)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	n := 0
	stored.Range(func(id, payload any) bool {
		n++
		got, err := s.Get(t.Context(), id.(string))
		if err != nil {
			t.Errorf("message %s: %v", id, err)
		} else if !bytes.Equal(got.Payload, payload.([]byte)) {
			t.Errorf("message %s: payload %q, want %q", id, got.Payload, payload)
		}
		return true
	})
	if n < 1000 {
		t.Errorf("only %d creates succeeded", n)
	}
}

// TestServerWithoutFunctions calls a server that knows no functions, as
// Redis 6 does: the error says what herald needs.
func TestServerWithoutFunctions(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go refuseEveryCommand(conn)
		}
	}()
	s, err := Open("redis://" + ln.Addr().String() + "/0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, _, err = s.Create(t.Context(), message("m1"), herald.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "herald needs Redis 7.0 or later") {
		t.Fatalf("Create on a server without functions: %v; want an error that names Redis 7.0", err)
	}
}

// refuseEveryCommand answers each command that conn sends, a RESP array
// of bulk strings, with Redis's error for an unknown command.
func refuseEveryCommand(conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	for {
		var n int
		if _, err := fmt.Fscanf(r, "*%d\r\n", &n); err != nil {
			return
		}
		var name string
		for i := range n {
			var size int
			if _, err := fmt.Fscanf(r, "$%d\r\n", &size); err != nil {
				return
			}
			arg := make([]byte, size+2)
			if _, err := io.ReadFull(r, arg); err != nil {
				return
			}
			if i == 0 {
				name = string(arg[:size])
			}
		}
		fmt.Fprintf(conn, "-ERR unknown command '%s', with args beginning with: \r\n", name)
	}
}
