package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"

	goredis "github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/bench"
	"github.com/heraldmq/herald/config"
)

func benchCommand() *cobra.Command {
	var storeURL, workloads, cpuProfile string
	var inProcess bool
	var nodes int
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the W1–W11 workloads and print one JSON line each",
		Long: `Runs the standard workloads against a store, W1–W7 and W9 with an in-process carrier:
  W1  one producer sends 20,000 messages of 256 bytes, each durable on return
  W2  16 producers share 50,000 sends
  W3  50,000 preloaded; dispatch concurrency 10; carrier accepts at once
  W4  5,000; the carrier takes 20 ms; concurrency 100 (ideal 5,000 msgs/s)
  W5  2,000; each fails its first attempt and succeeds on the second, retry delay 0
  W6  50,000 preloaded over 5,000 lanes (10 each); admission concurrency 2 per lane;
      dispatch concurrency 10; carrier accepts at once
  W7  50,000 preloaded on one lane; admission concurrency 10; dispatch concurrency 10;
      carrier accepts at once
  W8  10,000 confirmed LoRaWAN downlinks preloaded to 1,000 Class-C devices in turn,
      through the ChirpStack simulator (in process, delays 0, a perfect network) over
      real gRPC, its events posted back to herald's HTTP ingress on a loopback port by
      64 posters; dispatch concurrency 64. The route is ungated (no lorawan 2 s
      spacing): W8 measures herald's path, not the network's pace. msgs_per_s counts
      messages to DELIVERY_SUCCESSFUL; events_per_s the events the ingress answered
      204 (each after its commit); cpu_us_per_msg includes the simulator's share.
      Only run when named (--workload W8).
  W9  one room of 10 push subscriptions (in-process carrier, accepts at once); 16
      producers publish 10,000 events of 256 bytes while the engine runs: events_per_s
      is the events published (each durable with its 10 deliveries on return),
      msgs_per_s the deliveries completed, from the first publish to the last delivery.
      Only run when named (--workload W9).
  W10 1,000 LXMF messages (direct, 80 bytes) preloaded to one recipient of the Reticulum
      simulator (in process, over TCP through its transport node; paths learned before
      the clock starts); the lxmf profile's one message in flight per recipient: each
      message waits for the proof of the one before. msgs_per_s counts messages to
      DELIVERY_SUCCESSFUL (the recipient's proof, back through the inbox);
      cpu_us_per_msg includes the simulator's share. Only run when named.
  W11 5,000 such messages to 100 recipients in turn. Only run when named.
W6 and W7 need a store that keeps lane admission: one that does not fails them
with an error before anything is preloaded.
Each workload runs in a fresh child process on a fresh database, so its peak RSS is its own.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if benchOTel != "" {
				stop, err := traceBench(cmd, benchOTel)
				if err != nil {
					return err
				}
				defer stop()
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
				inProcess = true
			}
			names := strings.Split(workloads, ",")
			for _, name := range names {
				if wname, run, ok := findWiredWorkload(name); ok {
					if nodes > 0 {
						return fmt.Errorf("--nodes applies to W3 only, not %s", wname)
					}
					if !inProcess && len(names) > 1 {
						if err := runBenchChild(cmd, wname, storeURL); err != nil {
							return err
						}
						continue
					}
					res, err := run(cmd, storeURL)
					if err != nil {
						return fmt.Errorf("%s: %w", wname, err)
					}
					line, _ := json.Marshal(res)
					fmt.Fprintln(cmd.OutOrStdout(), string(line))
					continue
				}
				w, ok := bench.Find(strings.TrimSpace(name))
				if !ok {
					return fmt.Errorf("unknown workload %q (want W1..W11)", name)
				}
				if nodes > 0 {
					res, err := runNodes(cmd, w, storeURL, nodes)
					if err != nil {
						return fmt.Errorf("%s on %d nodes: %w", w.Name, nodes, err)
					}
					line, _ := json.Marshal(res)
					fmt.Fprintln(cmd.OutOrStdout(), string(line))
					continue
				}
				if !inProcess && len(names) > 1 {
					if err := runBenchChild(cmd, w.Name, storeURL); err != nil {
						return err
					}
					continue
				}
				res, err := runWorkload(cmd, w, storeURL)
				if err != nil {
					return fmt.Errorf("%s: %w", w.Name, err)
				}
				line, _ := json.Marshal(res)
				fmt.Fprintln(cmd.OutOrStdout(), string(line))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&storeURL, "store", "sqlite:", "store to measure: sqlite: alone (or with options only, as sqlite:?synchronous=normal) uses a fresh temporary database; redis://HOST:PORT/DB uses keys of its own, deleted afterwards")
	cmd.Flags().StringVar(&workloads, "workload", "W1,W2,W3,W4,W5,W6,W7", "comma-separated workloads to run")
	cmd.Flags().IntVar(&nodes, "nodes", 0, "W3 only: spread the dispatch over this many herald processes sharing the store (a redis:// store)")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (implies --in-process)")
	cmd.Flags().BoolVar(&inProcess, "in-process", false, "run every workload in this process instead of a child each")
	cmd.Flags().StringVar(&benchOTel, "otel", "", "W1–W7: trace the engine as serve does with otel: endpoint, exporting over OTLP/HTTP to this endpoint, to measure what tracing costs (each message sent with a traceparent of its own; not with --nodes)")
	return cmd
}

// findWiredWorkload returns the name and the run of a workload whose
// carrier and simulator are wired in this package (W8, W10, W11).
func findWiredWorkload(name string) (string, func(*cobra.Command, string) (bench.Result, error), bool) {
	if lw, ok := findLoRaWorkload(name); ok {
		return lw.Name, func(cmd *cobra.Command, storeURL string) (bench.Result, error) {
			return runLoRaWorkload(cmd, lw, storeURL)
		}, true
	}
	if mw, ok := findMeshWorkload(name); ok {
		return mw.Name, func(cmd *cobra.Command, storeURL string) (bench.Result, error) {
			return runMeshWorkload(cmd, mw, storeURL)
		}, true
	}
	return "", nil, false
}

func runBenchChild(cmd *cobra.Command, workload, storeURL string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.CommandContext(cmd.Context(), self, "bench", "--workload", workload, "--store", storeURL, "--in-process")
	if benchOTel != "" {
		child.Args = append(child.Args, "--otel", benchOTel)
	}
	child.Stdout, child.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
	if err := child.Run(); err != nil {
		return fmt.Errorf("%s: %w", workload, err) // the child said why on standard error
	}
	return nil
}

func runWorkload(cmd *cobra.Command, w bench.Workload, storeURL string) (bench.Result, error) {
	var res bench.Result
	err := withBenchStore(cmd, w.Name, storeURL, func(peer string, open func() (herald.Store, error)) (err error) {
		res, err = bench.Run(cmd.Context(), w, peer, open)
		return err
	})
	return res, err
}

// withBenchStore runs run on the store storeURL names, made fresh for one
// workload: a new SQLite database in a temporary directory ("sqlite:"
// alone, or with options only), or a Redis key prefix of its own, deleted
// afterwards, so that the database is left as it was. run gets the peer
// name of the results and a function that opens the store.
func withBenchStore(cmd *cobra.Command, workload, storeURL string, run func(peer string, open func() (herald.Store, error)) error) error {
	dir, err := os.MkdirTemp("", "herald-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if options, ok := strings.CutPrefix(storeURL, "sqlite:"); ok && (options == "" || options[0] == '?') {
		storeURL = "sqlite:" + filepath.Join(dir, "bench.db") + options
	}
	spec, err := config.ParseStore(storeURL)
	if err != nil {
		return err
	}
	if spec.Kind == config.StoreRedis {
		prefix := fmt.Sprintf("herald-bench-%d-%s", os.Getpid(), workload)
		storeURL = withQuery(storeURL, "prefix", prefix)
		defer dropRedisPrefix(cmd.Context(), spec.Location, prefix)
	}
	return run("herald-"+spec.Kind, func() (herald.Store, error) { return openStore(storeURL) })
}

// withQuery adds key=value to a URL's query.
func withQuery(rawURL, key, value string) string {
	sep := "?"
	if strings.Contains(rawURL, "?") {
		sep = "&"
	}
	return rawURL + sep + url.QueryEscape(key) + "=" + url.QueryEscape(value)
}

// dropRedisPrefix deletes the keys a benchmark wrote under prefix.
func dropRedisPrefix(ctx context.Context, redisURL, prefix string) {
	opt, err := goredis.ParseURL(redisURL)
	if err != nil {
		return
	}
	client := goredis.NewClient(opt)
	defer client.Close()
	iter := client.Scan(ctx, 0, "{"+prefix+"}:*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 1000 {
			client.Del(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		client.Del(ctx, batch...)
	}
}

// runNodes runs a dispatch workload over several child processes on one
// Redis, under a key prefix of its own.
func runNodes(cmd *cobra.Command, w bench.Workload, storeURL string, nodes int) (bench.Result, error) {
	spec, err := config.ParseStore(storeURL)
	if err != nil {
		return bench.Result{}, err
	}
	if spec.Kind != config.StoreRedis {
		return bench.Result{}, fmt.Errorf("--nodes needs a store that processes can share: redis://")
	}
	if w.Producers > 0 || w.Latency > 0 || w.FailFirst || w.Admission.Gated() {
		return bench.Result{}, fmt.Errorf("--nodes applies to W3 only: the nodes' carrier accepts at once on an ungated route, so it cannot keep %s's latency, first-attempt failures or lane admission", w.Name)
	}
	prefix := fmt.Sprintf("herald-bench-%d-%s-nodes", os.Getpid(), w.Name)
	storeURL = withQuery(storeURL, "prefix", prefix)
	defer dropRedisPrefix(cmd.Context(), spec.Location, prefix)
	self, err := os.Executable()
	if err != nil {
		return bench.Result{}, err
	}
	return bench.RunNodes(cmd.Context(), w, "herald-redis", nodes,
		func() (herald.Store, error) { return openStore(storeURL) },
		func() *exec.Cmd {
			c := exec.CommandContext(cmd.Context(), self, "bench-node", "--store", storeURL, "--concurrency", fmt.Sprint(w.Concurrency))
			c.Stderr = cmd.ErrOrStderr()
			return c
		})
}

// benchNodeCommand is one node of `herald bench --nodes`: it dispatches from
// the shared store until its standard input closes.
func benchNodeCommand() *cobra.Command {
	var storeURL string
	var concurrency int
	cmd := &cobra.Command{
		Use:    "bench-node",
		Short:  "One node of herald bench --nodes (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := openStore(storeURL)
			if err != nil {
				return err
			}
			defer store.Close()
			return bench.ServeNode(cmd.Context(), store, concurrency, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&storeURL, "store", "", "shared store")
	cmd.Flags().IntVar(&concurrency, "concurrency", 10, "dispatch concurrency")
	return cmd
}
