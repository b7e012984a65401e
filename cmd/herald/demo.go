package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/config"
	"github.com/heraldmq/herald/sim/webhooksink"
)

func demoCommand() *cobra.Command {
	var listen, store string
	var count int
	var failRate float64
	var exit bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the server with a flaky webhook sink, send a stream of messages and show their transitions live",
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
	sink := webhooksink.New(webhooksink.Config{FailRate: failRate, Delay: 30 * time.Millisecond, Seed: time.Now().UnixNano()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = webhooksink.Serve(ctx, ln, sink) }()

	f, err := config.Parse([]byte(fmt.Sprintf(`listen: %s
store: %s
api_keys: [{key: %s, tenant: default}]
routes:
  - name: demo
    carrier: webhook
    url: http://%s/in
    profile: channel
    policy:
      retry: {kind: exponential, base: 500ms, multiplier: 2, max: 4s, jitter: 0.2}
      max_attempts: 4
`, listen, store, demoKey, ln.Addr())))
	if err != nil {
		return err
	}
	srv, err := startServer(ctx, f, false, quietLogger())
	if err != nil {
		return err
	}
	defer srv.shutdown()
	client := &apiClient{server: "http://" + srv.addr, key: demoKey}
	fmt.Fprintf(out, "herald demo: server on http://%s (SQLite %s), webhook sink failing %.0f%% of requests\n", srv.addr, store, failRate*100)
	fmt.Fprintf(out, "sending %d messages; each line is one transition, as the timeline records it\n\n", count)

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
			if len(ids) < count {
				var view struct{ ID string }
				if err := client.getJSON(http.MethodPost, "/v1/messages", map[string]any{"route": "demo", "text": fmt.Sprintf("hello #%d", len(ids)+1)}, &view); err != nil {
					return err
				}
				ids = append(ids, view.ID)
				watched[view.ID] = 0
			}
		case <-pollTick.C:
			ended, err := printTransitions(out, client, ids, watched)
			if err != nil {
				return err
			}
			if len(ids) == count && endedCount(ended) == count {
				return finishDemo(ctx, out, client, sink, ended, exit)
			}
		}
	}
}

type demoView struct {
	ID        string
	Status    string
	LastError string `json:"last_error"`
	Timeline  []struct {
		At      time.Time
		From    string
		To      string
		Attempt int
		Reason  string
	}
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
func printTransitions(out io.Writer, client *apiClient, ids []string, printed map[string]int) (map[string]int, error) {
	statuses := map[string]int{}
	for i, id := range ids {
		var v demoView
		if err := client.getJSON(http.MethodGet, "/v1/messages/"+id, nil, &v); err != nil {
			return nil, err
		}
		for _, e := range v.Timeline[printed[id]:] {
			from := e.From
			if from == "" {
				from = "(new)"
			}
			line := fmt.Sprintf("%s  #%-3d %s…  %-15s -> %-19s attempt %d", e.At.Local().Format("15:04:05.000"), i+1, id[:13], from, e.To, e.Attempt)
			if e.Reason != "" {
				line += "  (" + e.Reason + ")"
			}
			fmt.Fprintln(out, line)
		}
		printed[id] = len(v.Timeline)
		statuses[v.Status]++
	}
	return statuses, nil
}

func finishDemo(ctx context.Context, out io.Writer, client *apiClient, sink *webhooksink.Sink, ended map[string]int, exit bool) error {
	s := sink.Stats()
	fmt.Fprintf(out, "\nall messages ended: %d DELIVERY_SUCCESSFUL, %d DELIVERY_FAILED (dead letters); the sink answered %d requests\n",
		ended["DELIVERY_SUCCESSFUL"], ended["DELIVERY_FAILED"], s.Requests)
	if exit {
		return nil
	}
	fmt.Fprintf(out, "\nthe server keeps running at %s — try:\n  HERALD_API_KEY=%s go run ./cmd/herald ls --status DELIVERY_FAILED\n  curl -s -H 'Authorization: Bearer %s' %s/v1/stats\nCtrl-C stops it.\n",
		client.server, demoKey, demoKey, client.server)
	<-ctx.Done()
	return nil
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// getJSON is do with the answer decoded into out.
func (c *apiClient) getJSON(method, path string, body, out any) error {
	var b strings.Builder
	if err := c.do(&b, method, path, body); err != nil {
		return err
	}
	return json.Unmarshal([]byte(b.String()), out)
}
