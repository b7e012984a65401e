package main

import (
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldmq/herald/sim/webhooksink"
)

func simCommand() *cobra.Command {
	sim := &cobra.Command{Use: "sim", Short: "Run a carrier simulator"}
	var cfg webhooksink.Config
	var listen string
	webhook := &cobra.Command{
		Use:   "webhook",
		Short: "A webhook receiver that fails a share of requests and records every send (GET /stats, /records)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.FailRate < 0 || cfg.FailRate > 1 {
				return fmt.Errorf("--fail-rate %v: want 0..1", cfg.FailRate)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			fmt.Fprintf(cmd.ErrOrStderr(), "webhook sink listening on http://%s (fail rate %.0f%%)\n", listen, cfg.FailRate*100)
			return webhooksink.ListenAndServe(ctx, listen, webhooksink.New(cfg))
		},
	}
	f := webhook.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:9000", "address to listen on")
	f.Float64Var(&cfg.FailRate, "fail-rate", 0, "share of requests answered with --fail-status, 0..1")
	f.IntVar(&cfg.FailStatus, "fail-status", 503, "HTTP status of a failed request")
	f.DurationVar(&cfg.Delay, "delay", 0, "time taken by each request")
	f.IntVar(&cfg.FailFirst, "fail-first", 0, "fail the first N attempts of each message")
	f.Int64Var(&cfg.Seed, "seed", time.Now().UnixNano(), "random seed for --fail-rate")
	sim.AddCommand(webhook)
	return sim
}
