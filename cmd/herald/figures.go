package main

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
)

// lanesCommand is `herald lanes`: the lanes of the gated routes, their
// queues and pauses.
func lanesCommand() *cobra.Command {
	var c clientFlags
	var route string
	var limit int
	cmd := &cobra.Command{
		Use:   "lanes [--route R] [--limit N]",
		Short: "List the lanes of the gated routes: queued, in flight, paused until, next send",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			if route != "" {
				q.Set("route", route)
			}
			if limit > 0 {
				q.Set("limit", strconv.Itoa(limit))
			}
			return c.print(cmd, http.MethodGet, pathWithQuery("/v1/lanes", q), nil)
		},
	}
	addClientFlags(cmd, &c)
	cmd.Flags().StringVar(&route, "route", "", "only this route's lanes")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many lanes (default: the server's)")
	cmd.AddCommand(pauseCommand(), resumeCommand())
	return cmd
}

// statsCommand is `herald stats`: counts by status and route, the oldest
// queued age, success rate and latencies.
func statsCommand() *cobra.Command {
	var c clientFlags
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Show the counts by status and route, the oldest waiting message's age, the success rate and latencies",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.show(cmd, http.MethodGet, "/v1/stats", nil, renderStats)
		},
	}
	addClientFlags(cmd, &c)
	return cmd
}

// healthCommand is `herald health`: healthy, warning or critical, and why.
func healthCommand() *cobra.Command {
	var c clientFlags
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Show whether the server is healthy, and what is wrong when it is not",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.show(cmd, http.MethodGet, "/v1/health", nil, renderHealth)
		},
	}
	addClientFlags(cmd, &c)
	return cmd
}
