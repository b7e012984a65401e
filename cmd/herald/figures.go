package main

import (
	"net/http"

	"github.com/spf13/cobra"
)

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
