package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald/config"
	"github.com/heraldmq/herald/internal/redistest"
)

// run runs the herald command line args against the server at base with
// key k1, and returns what it printed.
func runCLI(t *testing.T, base string, args ...string) (string, error) {
	t.Helper()
	cmd := rootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs(append(args, "--server", base, "--key", "k1", "-o", "json"))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// startCLIServer starts an in-process herald on SQLite with the key k1 of
// tenant acme, an egress policy that allows 127.0.0.1, and routes (YAML
// lines under "routes:"), stopped when the test ends, and returns its base
// URL.
func startCLIServer(t *testing.T, routes string) string {
	t.Helper()
	f, err := config.Parse([]byte("listen: 127.0.0.1:0\nstore: sqlite:" + filepath.Join(t.TempDir(), "herald.db") + "\n" +
		"api_keys: [{key: k1, tenant: acme}]\negress: {allow: [127.0.0.1]}\nroutes:\n" + routes))
	if err != nil {
		t.Fatal(err)
	}
	s, err := startServer(context.Background(), f, false, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.shutdown(); err != nil {
			t.Error(err)
		}
	})
	return "http://" + s.addr
}

// mustCLI returns a function that runs the CLI against base (-o json) and fails the
// test when it fails.
func mustCLI(t *testing.T, base string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		out, err := runCLI(t, base, args...)
		if err != nil {
			t.Fatalf("herald %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
}

// TestRoomsCLI drives rooms, subscriptions, a publish and a pull through
// the command line against a server: herald rooms, subs, publish, pull,
// ack, nack.
func TestRoomsCLI(t *testing.T) {
	t.Setenv("CLI_HOOK_SECRET", "own")
	base := startCLIServer(t, "  - {name: hooks, carrier: webhook, url: \"http://127.0.0.1:9/in\", secret_env: CLI_HOOK_SECRET}\n")
	must := mustCLI(t, base)
	var room struct{ Name, Expiration string }
	if err := json.Unmarshal([]byte(must("rooms", "create", "orders", "--expiration", "1h", "--attempts", "2")), &room); err != nil || room.Expiration != "1h0m0s" {
		t.Fatalf("rooms create: %+v %v", room, err)
	}
	if out := must("rooms", "ls"); !strings.Contains(out, `"orders"`) {
		t.Errorf("rooms ls: %s", out)
	}
	var sub struct{ ID string }
	if err := json.Unmarshal([]byte(must("subs", "create", "orders", "--type", "pull", "--event-type", "order.created:1")), &sub); err != nil || sub.ID == "" {
		t.Fatalf("subs create: %+v %v", sub, err)
	}
	if out := must("subs", "create", "orders", "--type", "push", "--url", "http://127.0.0.1:9/hook"); !strings.Contains(out, `"secret": "whsec_`) {
		t.Errorf("subs create without --secret: %s, want the secret herald generated", out)
	}
	if _, err := runCLI(t, base, "subs", "create", "orders", "--type", "push", "--url", "http://127.0.0.1:9/hook", "--secret", "own"); err == nil ||
		!strings.Contains(err.Error(), "400") {
		t.Errorf("subs create with a secret not in the whsec_ form: %v, want a 400", err)
	}
	if out := must("subs", "ls", "orders"); strings.Count(out, `"id"`) != 2 {
		t.Errorf("subs ls: %s", out)
	}
	var ev struct {
		EventID    string `json:"event_id"`
		Deliveries []struct {
			SubscriptionID string `json:"subscription_id"`
		}
	}
	if err := json.Unmarshal([]byte(must("publish", "orders", "order.created", "--version", "1", "--data", `{"n":1}`)), &ev); err != nil || len(ev.Deliveries) != 2 {
		t.Fatalf("publish: %+v %v", ev, err)
	}
	out := must("pull", sub.ID, "--ack")
	if !strings.Contains(out, ev.EventID) || !strings.Contains(out, `"lease_id"`) || !strings.Contains(out, `"acked": 1`) {
		t.Errorf("pull --ack: %s", out)
	}
	// herald ack and herald nack settle by lease id; a lease no longer
	// held comes back lost.
	must("publish", "orders", "order.created", "--version", "1")
	must("publish", "orders", "order.created", "--version", "1")
	var pulled struct {
		Deliveries []struct {
			LeaseID string `json:"lease_id"`
		}
	}
	if err := json.Unmarshal([]byte(must("pull", sub.ID, "--max", "2")), &pulled); err != nil || len(pulled.Deliveries) != 2 {
		t.Fatalf("pull: %+v %v, want two deliveries", pulled, err)
	}
	first, second := pulled.Deliveries[0].LeaseID, pulled.Deliveries[1].LeaseID
	var settled struct {
		Acked, Nacked int
		Lost          []string
	}
	if err := json.Unmarshal([]byte(must("ack", sub.ID, first)), &settled); err != nil || settled.Acked != 1 || settled.Lost == nil || len(settled.Lost) != 0 {
		t.Errorf("ack: %+v %v, want 1 acked", settled, err)
	}
	settled.Lost = nil
	if err := json.Unmarshal([]byte(must("nack", sub.ID, second, first)), &settled); err != nil || settled.Nacked != 1 || !slices.Equal(settled.Lost, []string{first}) {
		t.Errorf("nack: %+v %v, want 1 nacked and the acked lease lost", settled, err)
	}
	if _, err := runCLI(t, base, "ack", sub.ID); err == nil {
		t.Error("ack with no lease id: no error")
	}
	if _, err := runCLI(t, base, "ack", sub.ID, "not-a-lease"); err == nil || !strings.Contains(err.Error(), "lease_ids") {
		t.Errorf("ack of a made-up lease id: %v, want an error naming lease_ids", err)
	}
	must("subs", "rm", sub.ID)
	must("rooms", "rm", "orders")
	if out := must("rooms", "ls"); strings.Contains(out, "orders") {
		t.Errorf("rooms ls after rm: %s", out)
	}
}

// roomNodeConfig is the config of one herald process on storeURL with no
// route of its own: rooms only.
func roomNodeConfig(addr, storeURL string) string {
	return fmt.Sprintf(`listen: %s
store: %s
api_keys:
  - {key_env: HERALD_TEST_KEY, tenant: test}
routes:
  - {name: hooks, carrier: webhook, url: "http://127.0.0.1:9/in"}
`, addr, storeURL)
}

// mustCall calls node and fails the test unless it answers want.
func mustCall(t *testing.T, node *serverProc, method, path string, body, out any, want int) {
	t.Helper()
	code, err := node.call(method, path, body, out)
	if err != nil || code != want {
		t.Fatalf("%s %s: %d %v, want %d", method, path, code, err, want)
	}
}

// lease is one delivery handed to a puller: when the pull was sent and
// when its answer came, in the test's time.
type lease struct {
	puller     int
	sent, came time.Time
}

// TestPullAcrossNodes runs two herald processes on one Redis with 1,000
// deliveries waiting for a pull subscription, and four pullers, two on
// each node, that lease them 20 at a time and acknowledge each, but for
// one in ten, whose lease of 2 s they let run out. Every delivery is
// acknowledged exactly once, and no delivery is leased to a second puller
// before the first lease could have run out.
func TestPullAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	const total, leaseFor = 1000, 2 * time.Second
	rs := redistest.Start(t)
	var nodes []*serverProc
	for range 2 {
		addr := freeAddr(t)
		n := startProc(t, t.TempDir(), roomNodeConfig(addr, rs.URL()))
		n.waitReady("http://" + addr)
		nodes = append(nodes, n)
	}
	mustCall(t, nodes[0], "POST", "/v1/rooms", map[string]any{"name": "jobs", "delivery": map[string]any{"delay": "500ms", "multiplier": 1, "attempts": 50}}, nil, http.StatusCreated)
	var sub struct{ ID string }
	mustCall(t, nodes[1], "POST", "/v1/rooms/jobs/subscriptions", map[string]any{"type": "pull"}, &sub, http.StatusCreated)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < total; i += 8 {
				mustCall(t, nodes[i%2], "POST", "/v1/rooms/jobs/events", map[string]any{"type": "job", "data": i}, nil, http.StatusAccepted)
			}
		})
	}
	wg.Wait()

	var (
		mu     sync.Mutex
		leases = map[string][]lease{}
		acked  = map[string]int{}
		done   atomic.Int64
	)
	deadline := time.Now().Add(2 * time.Minute)
	for p := range 4 {
		wg.Go(func() {
			node := nodes[p%2]
			for n := 0; done.Load() < total && time.Now().Before(deadline); n++ {
				var got struct {
					Deliveries []struct {
						ID      string
						LeaseID string `json:"lease_id"`
					} `json:"deliveries"`
				}
				sent := time.Now()
				if code, err := node.call("POST", "/v1/subscriptions/"+sub.ID+"/pull", map[string]any{"max": 20, "lease": leaseFor.String()}, &got); err != nil || code != http.StatusOK {
					t.Errorf("puller %d: pull: %d %v", p, code, err)
					return
				}
				came := time.Now()
				if len(got.Deliveries) == 0 {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				mu.Lock()
				for _, d := range got.Deliveries {
					leases[d.ID] = append(leases[d.ID], lease{puller: p, sent: sent, came: came})
				}
				mu.Unlock()
				for k, d := range got.Deliveries {
					if (n+k)%10 == 3 {
						continue // forgotten: its lease runs out
					}
					var res struct{ Acked int }
					if code, err := node.call("POST", "/v1/subscriptions/"+sub.ID+"/ack", map[string]any{"lease_ids": []string{d.LeaseID}}, &res); err != nil || code != http.StatusOK {
						t.Errorf("puller %d: ack: %d %v", p, code, err)
						return
					}
					if res.Acked == 1 {
						mu.Lock()
						acked[d.ID]++
						mu.Unlock()
						done.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()

	if len(acked) != total {
		t.Fatalf("%d of %d deliveries acknowledged", len(acked), total)
	}
	again := 0
	for id, n := range acked {
		if n != 1 {
			t.Errorf("delivery %s acknowledged %d times", id, n)
		}
		ls := leases[id]
		sort.Slice(ls, func(i, j int) bool { return ls[i].sent.Before(ls[j].sent) })
		for i := 1; i < len(ls); i++ {
			again++
			if ls[i].came.Before(ls[i-1].sent.Add(leaseFor)) {
				t.Errorf("delivery %s leased to puller %d at %v, while puller %d's lease of %v ran",
					id, ls[i].puller, ls[i].came.Sub(ls[i-1].sent), ls[i-1].puller, leaseFor)
			}
		}
	}
	if again == 0 {
		t.Error("no lease ran out: the test proves nothing about leases across nodes")
	}
	var stats struct {
		ByStatus map[string]int `json:"by_status"`
	}
	mustCall(t, nodes[0], "GET", "/v1/stats", nil, &stats, http.StatusOK)
	if stats.ByStatus["DELIVERY_SUCCESSFUL"] != total {
		t.Errorf("stats: %v, want %d DELIVERY_SUCCESSFUL", stats.ByStatus, total)
	}
	t.Logf("%d deliveries pulled over two nodes by four pullers; %d leased again after their lease ran out", total, again)
}

// TestCrashDuringPublishes publishes 500 events to a room of three
// subscriptions, two of which take each event, from 8 clients, and kills
// the server (SIGKILL) midway: after a restart, every publish that was
// answered 202 has its two deliveries, exactly once each, and any other
// has both or none.
func TestCrashDuringPublishes(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	const total = 500
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := roomNodeConfig(addr, "sqlite:"+filepath.Join(dir, "herald.db"))
	srv := startProc(t, dir, cfg)
	srv.waitReady("http://" + addr)
	mustCall(t, srv, "POST", "/v1/rooms", map[string]any{"name": "orders"}, nil, http.StatusCreated)
	subs := map[string]string{}
	for _, s := range []struct {
		name  string
		types []map[string]any
	}{
		{"all", nil},
		{"created", []map[string]any{{"type": "order.created", "version": 1}}},
		{"paid", []map[string]any{{"type": "order.paid"}}},
	} {
		var sub struct{ ID string }
		mustCall(t, srv, "POST", "/v1/rooms/orders/subscriptions", map[string]any{"type": "pull", "event_types": s.types}, &sub, http.StatusCreated)
		subs[s.name] = sub.ID
	}
	type answered struct {
		Deliveries []struct {
			SubscriptionID string `json:"subscription_id"`
			MessageID      string `json:"message_id"`
		} `json:"deliveries"`
	}
	var (
		mu      sync.Mutex
		ok      = map[int]answered{}
		killed  atomic.Bool
		wg      sync.WaitGroup
		pending = make(chan int, total)
	)
	for i := range total {
		pending <- i
	}
	close(pending)
	for range 8 {
		wg.Go(func() {
			for i := range pending {
				if killed.Load() {
					return
				}
				var a answered
				code, err := srv.call("POST", "/v1/rooms/orders/events", map[string]any{
					"type": "order.created", "version": 1, "data": i, "correlation_id": fmt.Sprintf("ev-%d", i)}, &a)
				if err == nil && code == http.StatusAccepted {
					mu.Lock()
					ok[i] = a
					if len(ok) == total/2 {
						killed.Store(true)
						srv.kill()
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if !killed.Load() {
		t.Fatal("the server was never killed")
	}
	srv = startProc(t, dir, cfg)
	srv.waitReady("http://" + addr)

	want := []string{subs["all"], subs["created"]}
	sort.Strings(want)
	partial := 0
	for i := range total {
		var list struct {
			Messages []struct{ ID, Target, Route string } `json:"messages"`
		}
		mustCall(t, srv, "GET", fmt.Sprintf("/v1/messages?correlation_id=ev-%d", i), nil, &list, http.StatusOK)
		var targets []string
		for _, m := range list.Messages {
			targets = append(targets, m.Target)
		}
		sort.Strings(targets)
		a, answered := ok[i]
		switch {
		case answered && strings.Join(targets, ",") != strings.Join(want, ","):
			t.Errorf("publish %d was answered 202, but its deliveries go to %v, want %v once each", i, targets, want)
		case answered:
			ids := map[string]bool{}
			for _, m := range list.Messages {
				ids[m.ID] = true
			}
			for _, d := range a.Deliveries {
				if !ids[d.MessageID] {
					t.Errorf("publish %d: delivery %s was answered but is not stored", i, d.MessageID)
				}
			}
		case len(targets) != 0 && len(targets) != len(want):
			partial++
			t.Errorf("publish %d, not answered, has %d of its %d deliveries", i, len(targets), len(want))
		}
	}
	t.Logf("killed after %d answered publishes of %d; each answered one has its deliveries once (%d partial)", len(ok), total, partial)
}
