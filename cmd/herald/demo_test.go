package main

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/config"
	"github.com/heraldmq/herald/store/sqlite"
)

// TestDemoShowsMessagesFlowing runs the demo to its end and checks that it
// printed the transitions of every message and a summary: the webhooks, the
// chat messages (one of them in chunks, one paused by a 429, one failed at
// once by a chat that blocked the bot) and the LoRaWAN downlinks through
// the ChirpStack simulator (all four stages, one retried after a NACK, one
// failed at once as too big), and the meter tasks through the Calin V1 and
// V2 simulators (one task each; a reused token rejected at once), and the
// LXMF messages through the Reticulum simulator (proved by the recipient,
// accepted by the propagation node, one to a recipient that comes online
// late after a path request).
func TestDemoShowsMessagesFlowing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	store := "sqlite:" + filepath.Join(t.TempDir(), "demo.db")
	if err := runDemo(ctx, &out, freeAddr(t), store, 5, 0.3, true); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"(new)           -> QUEUED", "SENT_TO_NS", "all messages ended: ", "/ui (log in with the key demo-key)",
		"chat 0", "demo 0", "-> TO_RETRY            attempt 0  (backpressure)",
		"Telegram: 7 sendMessage calls; Alice's chat shows 4 messages, the channel 1, Bob's none",
		"to 1001          DELIVERY_SUCCESSFUL, in 3 chunks: external_id 2,3,4",
		"to @herald_news  DELIVERY_SUCCESSFUL, message id 1",
		"to 1002          DELIVERY_FAILED: telegram: sendMessage: 403 Forbidden: bot was blocked by the user",
		"DELIVERED_TO_NS -> SENT_TO_DEVICE      attempt 1  (transmitted to the device)",
		"SENT_TO_DEVICE  -> DELIVERY_SUCCESSFUL attempt 1  (acknowledged by the device)",
		"SENT_TO_DEVICE  -> TO_RETRY            attempt 1  (not acknowledged)",
		"to 0004a30b001c0a02  DELIVERY_FAILED at attempt 1: DOWNLINK_PAYLOAD_SIZE",
		"Calin: V1 created 3 tasks, V2 2 — one per message",
		"DELIVERED_TO_NS -> DELIVERY_SUCCESSFUL attempt 1  (task completed (execution: success))",
		"to meter 47001234567 (meters-v1)  DELIVERY_SUCCESSFUL, task 1001, execution success",
		"to meter 47001234567 (meters-v1)  DELIVERY_FAILED, task 1003: calin-v1: task 1003 (token task for meter 47001234567): COMM_RemoteTokenTask: the meter rejected the token",
		"LXMF: alice received 2 messages, the late recipient 1 (online after 3s), the propagation node took 1",
		"DELIVERED_TO_NS -> DELIVERY_SUCCESSFUL attempt 1  (accepted by the propagation node)",
		"-> DELIVERY_SUCCESSFUL attempt 2  (proved by the recipient)",
		"SENT_TO_NS      -> TO_RETRY            attempt 1  (path_requested)",
		"(direct, resource; LXMF hash "} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	if n, want := strings.Count(text, "-> QUEUED              attempt 0  (created)"), 5+len(demoChats())+len(demoDownlinks())+len(demoMeterTasks())+4; n != want {
		t.Errorf("demo showed %d messages created, want %d: 5 webhooks, the chat messages, the downlinks, the meter tasks and 4 LXMF messages:\n%s", n, want, text)
	}
	if n := strings.Count(text, "DELIVERY_SUCCESSFUL at attempt"); n != len(demoDownlinks())-1 {
		t.Errorf("%d downlinks succeeded, want all but the one too big:\n%s", n, text)
	}
	if n := strings.Count(text, "-> DELIVERY_FAILED     attempt 1  (permanent error: send failed)"); n < 1 {
		t.Errorf("the blocked chat's message did not fail at its first attempt:\n%s", text)
	}

	// The shortened ids it printed are unique prefixes, which get and the
	// admin page take.
	st, err := sqlite.Open(strings.TrimPrefix(store, "sqlite:"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	shortIDs := map[string]bool{}
	for _, m := range regexp.MustCompile(`#\d+ +\S+ +([0-9a-f]{8}-[0-9a-f]{4})…`).FindAllStringSubmatch(text, -1) {
		shortIDs[m[1]] = true
	}
	if len(shortIDs) == 0 {
		t.Errorf("the demo printed no shortened id:\n%s", text)
	}
	for prefix := range shortIDs {
		msgs, _, err := st.List(ctx, herald.Query{IDPrefix: prefix, Limit: 2})
		if len(prefix) < minIDPrefix || err != nil || len(msgs) != 1 {
			t.Errorf("the demo's shortened id %s: %d messages start so (%v), want a unique prefix of %d characters or more", prefix, len(msgs), err, minIDPrefix)
		}
	}
}

// TestServeKeepsFlowControlOnRedis builds routes for the Redis store with
// every flow control, a webhook route's default circuit included: Redis
// keeps them all, as SQLite does.
func TestServeKeepsFlowControlOnRedis(t *testing.T) {
	f, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	f.Store = "redis://127.0.0.1:1/0"
	routes, err := buildRoutes(f, slog.Default())
	if err != nil {
		t.Fatalf("buildRoutes on Redis: %v", err)
	}
	def := config.DefaultWebhookCircuit
	if got, want := routes[0].Policy.Admission.Circuit, (herald.Circuit{Failures: def.Failures, CoolDown: def.CoolDown.D()}); got != want {
		t.Errorf("webhook route's circuit on Redis = %+v, want the default %+v", got, want)
	}
	f.Routes[0].Ordered = true
	f.Routes[0].DedupTTL = config.Duration(time.Hour)
	f.Routes[0].Circuit = &config.Circuit{Failures: 3, CoolDown: config.Duration(time.Second)}
	if routes, err = buildRoutes(f, slog.Default()); err != nil {
		t.Fatalf("buildRoutes with ordered, dedup_ttl and circuit on Redis: %v", err)
	}
	p := routes[0].Policy
	if !p.Admission.Ordered || p.DedupTTL != time.Hour || p.Admission.Circuit != (herald.Circuit{Failures: 3, CoolDown: time.Second}) {
		t.Errorf("policy on Redis: ordered %v, dedup_ttl %v, circuit %+v; want them as configured", p.Admission.Ordered, p.DedupTTL, p.Admission.Circuit)
	}

	// A telegram route keeps its defaults too: spacing and one at a time per
	// chat, and a circuit.
	t.Setenv("HERALD_TEST_TELEGRAM_TOKEN", "123:abc")
	f.Routes = append(f.Routes, config.Route{Name: "chat", Carrier: config.CarrierTelegram, TokenEnv: "HERALD_TEST_TELEGRAM_TOKEN"})
	if routes, err = buildRoutes(f, slog.Default()); err != nil {
		t.Fatalf("buildRoutes with a telegram route on Redis: %v", err)
	}
	tc := config.DefaultTelegramCircuit
	want := herald.Admission{Spacing: config.DefaultTelegramSpacing, Concurrency: config.DefaultTelegramConcurrency,
		RouteRate: herald.Rate(config.DefaultTelegramRouteRate),
		Circuit:   herald.Circuit{Failures: tc.Failures, CoolDown: tc.CoolDown.D()}}
	if got := routes[1].Policy.Admission; got != want {
		t.Errorf("telegram route's admission on Redis = %+v, want %+v", got, want)
	}
	if _, ok := routes[1].Carrier.(herald.Resumer); !ok {
		t.Errorf("the telegram route's carrier %T does not resume", routes[1].Carrier)
	}
}

// TestServeRefusesTelegramRoutesWithoutTheirToken: a telegram route whose
// token variable is unset (or holds no token) is refused, naming the
// variable and never the token.
func TestServeRefusesTelegramRoutesWithoutTheirToken(t *testing.T) {
	f, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	f.Routes = append(f.Routes, config.Route{Name: "chat", Carrier: config.CarrierTelegram, TokenEnv: "HERALD_TEST_SURELY_UNSET"})
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "HERALD_TEST_SURELY_UNSET is not set") {
		t.Errorf("Validate = %v, want the variable named", err)
	}
	if _, err := buildRoutes(f, slog.Default()); err == nil || !strings.Contains(err.Error(), "HERALD_TEST_SURELY_UNSET is not set") {
		t.Errorf("buildRoutes = %v, want the variable named", err)
	}
	t.Setenv("HERALD_TEST_BAD_TOKEN", "12 34/hushhush")
	f.Routes[1].TokenEnv = "HERALD_TEST_BAD_TOKEN"
	if _, err := buildRoutes(f, slog.Default()); err == nil || !strings.Contains(err.Error(), `route "chat"`) || strings.Contains(err.Error(), "hushhush") {
		t.Errorf("buildRoutes with a malformed token = %v, want it refused without showing the token", err)
	}
}
