package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/client"
	"github.com/heraldmq/herald/config"
	tgsim "github.com/heraldmq/herald/sim/telegram"
	"github.com/heraldmq/herald/sim/webhooksink"
)

// The demo's Telegram chats, in its Bot API simulator.
const (
	demoAlice   int64 = 1001           // a private chat
	demoBob     int64 = 1002           // a private chat whose user blocked the bot
	demoChannel int64 = -1001234567890 // @herald_news, a channel
)

// demoTelegramTokenEnv holds the bot token of the demo's telegram route: the
// simulator's.
const demoTelegramTokenEnv = "HERALD_DEMO_TELEGRAM_TOKEN"

// demoSend is one message the demo sends.
type demoSend struct {
	route, target, lane, text string
	payload                   []byte
	params                    map[string]string
}

// demoChats are the demo's chat messages: markdown, a text long enough for
// three chunks, a channel whose first answer is a 429, and a chat that
// blocked the bot.
// demoEgress is the egress policy's allow list of the demo servers (no
// config, herald demo), which run on this machine: rooms' push
// subscriptions may reach its loopback addresses.
var demoEgress = []string{"127.0.0.0/8", "::1"}

// quoted returns items as the items of a YAML flow sequence, each quoted
// (an IPv6 address would not read as a plain scalar).
func quoted(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

func demoChats() []demoSend {
	long := strings.Repeat("herald splits a long text on paragraph breaks, then lines, then words, and sends the chunks in order. ", 30)
	long = strings.Repeat(strings.TrimSpace(long)+"\n\n", 3) // about 9,300 characters: three messages
	return []demoSend{
		{route: "chat", target: "1001", text: "*herald demo*: hello _Alice_ 👋 — `markdown` becomes Telegram's HTML, <tags> & all",
			params: map[string]string{"parse_mode": "markdown"}},
		{route: "chat", target: "1001", text: long},
		{route: "chat", target: "@herald_news", text: "News: the channel answers 429 first; herald waits its retry_after without spending an attempt"},
		{route: "chat", target: "1002", text: "Bob blocked the bot: this fails at once, no retry"},
	}
}

func demoCommand() *cobra.Command {
	var listen, store string
	var count int
	var failRate float64
	var exit bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the server with a flaky webhook sink and simulators of the Telegram Bot API, a ChirpStack network server, the Calin meter APIs and a Reticulum network with LXMF recipients, send a stream of messages and show their transitions live",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if failRate < 0 || failRate >= 1 {
				return fmt.Errorf("--fail-rate %v: want 0 <= rate < 1", failRate)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runDemo(ctx, cmd.OutOrStdout(), listen, store, count, failRate, exit)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", config.DefaultListen, "address of the server")
	f.StringVar(&store, "store", config.DefaultStore, "store of the server")
	f.IntVar(&count, "count", 20, "messages to send")
	f.Float64Var(&failRate, "fail-rate", 0.3, "share of webhook requests the sink fails with 503")
	f.BoolVar(&exit, "exit", false, "exit once every message has ended, instead of serving on")
	return cmd
}

func runDemo(ctx context.Context, out io.Writer, listen, store string, count int, failRate float64, exit bool) error {
	listen, err := resolveListen(listen)
	if err != nil {
		return err
	}
	network, err := startDemoNetwork(ctx, listen)
	if err != nil {
		return err
	}
	meters, err := startDemoMeters(ctx)
	if err != nil {
		return err
	}
	mesh, err := startDemoMesh(ctx)
	if err != nil {
		return err
	}
	sink := webhooksink.New(webhooksink.Config{FailRate: failRate, Delay: 30 * time.Millisecond, Seed: time.Now().UnixNano()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = webhooksink.Serve(ctx, ln, sink) }()

	bot := tgsim.New(tgsim.Config{Chats: []tgsim.Chat{
		{ID: demoAlice, FirstName: "Alice"},
		{ID: demoBob, FirstName: "Bob", Status: tgsim.StatusBlocked},
		{ID: demoChannel, Type: tgsim.ChatChannel, Username: "herald_news", Title: "herald news",
			Faults: tgsim.Faults{Next429: 1, RetryAfter: 1}},
	}})
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = tgsim.Serve(ctx, tln, bot) }()
	// The demo's API key and tokens are the simulators', set for this
	// process only.
	if err := os.Setenv(demoTelegramTokenEnv, bot.Token()); err != nil {
		return err
	}

	f, err := config.Parse([]byte(fmt.Sprintf(`listen: %s
store: %s
api_keys: [{key: %s, tenant: default, role: admin}]
egress: {allow: [%s]}
routes:
  - name: demo
    carrier: webhook
    url: http://%s/in
    profile: channel
    policy:
      retry: {kind: exponential, base: 500ms, multiplier: 2, max: 4s, jitter: 0.2}
      max_attempts: 4
  - name: chat
    carrier: telegram
    token_env: %s
    base_url: http://%s
    policy:
      retry: {kind: exponential, base: 500ms, multiplier: 2, max: 4s, jitter: 0.2}
      max_attempts: 4
%s%s%s`, listen, store, demoKey, quoted(demoEgress), ln.Addr(), demoTelegramTokenEnv, tln.Addr(), demoLoRaRoute(network.Addr()), meters.routes(), mesh.routes())))
	if err != nil {
		return err
	}
	srv, err := startServer(ctx, f, false, quietLogger())
	if err != nil {
		return err
	}
	defer srv.shutdown()
	base := "http://" + srv.addr
	api, err := client.New(client.Config{URL: base, Key: demoKey})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "herald demo: server on http://%s (SQLite %s), webhook sink failing %.0f%% of requests, Telegram Bot API simulator on http://%s, ChirpStack simulator (gRPC) on %s with %d Class-C devices NACKing %.0f%% of downlinks, Calin V1 and V2 simulators on http://%s and http://%s, Reticulum transport node (LXMF recipients and a propagation node) on %s\n",
		srv.addr, store, failRate*100, tln.Addr(), network.Addr(), len(demoDevices), demoNackRate*100, meters.v1Addr, meters.v2Addr, mesh.sim.Addr())
	fmt.Fprintf(out, "admin page: %s/ui (log in with the key %s)\n", base, demoKey)
	chats, downlinks, tasks, lxmf := demoChats(), demoDownlinks(), demoMeterTasks(), mesh.sends()
	sends := append(append(append(append([]demoSend{}, chats...), downlinks...), tasks...), lxmf...)
	for i := range count {
		sends = append(sends, demoSend{route: "demo", text: fmt.Sprintf("hello #%d", i+1)})
	}
	fmt.Fprintf(out, "sending %d chat messages (route chat, carrier telegram), %d LoRaWAN downlinks (route lora, carrier chirpstack), %d meter commands (routes meters-v1 and meters-v2, carriers calin-v1 and calin-v2; each task polled 10 s after it was created), %d LXMF messages (routes mesh and mesh-pn, carrier lxmf; a path asked for waits 7 s) and %d webhooks (route demo); each line is one transition, as the timeline records it\n\n",
		len(chats), len(downlinks), len(tasks), len(lxmf), count)

	watched := make(map[string]int) // id -> timeline entries printed
	var ids []string
	sendTick := time.NewTicker(150 * time.Millisecond)
	defer sendTick.Stop()
	pollTick := time.NewTicker(100 * time.Millisecond)
	defer pollTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sendTick.C:
			if len(ids) < len(sends) {
				s := sends[len(ids)]
				res, err := api.Send(ctx, client.SendRequest{Route: s.route, Target: s.target, Payload: s.payload,
					Text: s.text, Params: s.params, Lane: s.lane})
				if err != nil {
					return demoStopped(ctx, err)
				}
				ids = append(ids, res.Message.ID)
				watched[res.Message.ID] = 0
			}
		case <-pollTick.C:
			ended, err := printTransitions(ctx, out, api, ids, watched)
			if err != nil {
				return demoStopped(ctx, err)
			}
			if len(ids) == len(sends) && endedCount(ended) == len(sends) {
				if err := printChats(ctx, out, api, ids[:len(chats)], bot); err != nil {
					return demoStopped(ctx, err)
				}
				if err := printNetwork(ctx, out, api, ids[len(chats):len(chats)+len(downlinks)], network); err != nil {
					return demoStopped(ctx, err)
				}
				first := len(chats) + len(downlinks)
				if err := printMeters(ctx, out, api, ids[first:first+len(tasks)], meters); err != nil {
					return demoStopped(ctx, err)
				}
				first += len(tasks)
				if err := mesh.print(ctx, out, api, ids[first:first+len(lxmf)]); err != nil {
					return demoStopped(ctx, err)
				}
				return finishDemo(ctx, out, base, sink, ended, exit)
			}
		}
	}
}

// demoStopped returns err, or nil when ctx has ended: the demo was
// stopped while it talked to the server.
func demoStopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// printChats says what became of the chat messages and what the chats show.
func printChats(ctx context.Context, out io.Writer, api *client.Client, ids []string, bot *tgsim.Sim) error {
	calls := 0
	for _, c := range bot.Calls() {
		if c.Method == "sendmessage" {
			calls++
		}
	}
	fmt.Fprintf(out, "\nTelegram: %d sendMessage calls; Alice's chat shows %d messages, the channel %d, Bob's none\n",
		calls, len(bot.Messages(demoAlice)), len(bot.Messages(demoChannel)))
	for i, id := range ids {
		v, err := api.Get(ctx, id)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("  #%-3d to %-13s %s", i+1, v.Target, v.Status)
		switch {
		case strings.Contains(v.ExternalID, ","):
			line += fmt.Sprintf(", in %d chunks: external_id %s", strings.Count(v.ExternalID, ",")+1, v.ExternalID)
		case v.Status == herald.StatusDeliverySuccessful:
			line += ", message id " + v.ExternalID
		case v.LastError != "":
			line += ": " + v.LastError
		}
		fmt.Fprintln(out, line)
	}
	return nil
}

// endedCount sums the counts of byStatus (status name -> messages) that are
// in a terminal status.
func endedCount(byStatus map[string]int) int {
	n := 0
	for status, c := range byStatus {
		if herald.Status(status).Terminal() {
			n += c
		}
	}
	return n
}

// printTransitions prints the new timeline entries of every message and
// returns the messages' statuses, counted.
func printTransitions(ctx context.Context, out io.Writer, api *client.Client, ids []string, printed map[string]int) (map[string]int, error) {
	statuses := map[string]int{}
	for i, id := range ids {
		v, err := api.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, e := range v.Timeline[printed[id]:] {
			from := string(e.From)
			if from == "" {
				from = "(new)"
			}
			line := fmt.Sprintf("%s  #%-3d %-4s %s…  %-15s -> %-19s attempt %d", e.At.Local().Format("15:04:05.000"), i+1, v.Route, id[:13], from, e.To, e.Attempt)
			if e.Reason != "" {
				line += "  (" + e.Reason + ")"
			}
			fmt.Fprintln(out, line)
		}
		printed[id] = len(v.Timeline)
		statuses[string(v.Status)]++
	}
	return statuses, nil
}

func finishDemo(ctx context.Context, out io.Writer, base string, sink *webhooksink.Sink, ended map[string]int, exit bool) error {
	s := sink.Stats()
	fmt.Fprintf(out, "\nall messages ended: %d DELIVERY_SUCCESSFUL, %d DELIVERY_FAILED (dead letters); the sink answered %d requests\n",
		ended["DELIVERY_SUCCESSFUL"], ended["DELIVERY_FAILED"], s.Requests)
	if exit {
		return nil
	}
	fmt.Fprintf(out, "\nthe server keeps running at %s — try:\n  the admin page: %s/ui (key %s)\n  HERALD_API_KEY=%s go run ./cmd/herald ls --status DELIVERY_FAILED\n  curl -s -H 'Authorization: Bearer %s' %s/v1/stats\nCtrl-C stops it.\n",
		base, base, demoKey, demoKey, demoKey, base)
	<-ctx.Done()
	return nil
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
