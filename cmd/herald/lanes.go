package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldmq/herald/client"
)

// lanesCommand is `herald lanes`: the busiest lanes and the operator's
// pauses, and its pause and resume subcommands.
func lanesCommand() *cobra.Command {
	var (
		c     clientFlags
		route string
		limit int
	)
	lanes := &cobra.Command{
		Use: "lanes", Short: "List the busiest lanes and the operator's pauses; pause or resume a lane or a route", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			if route != "" {
				q.Set("route", route)
			}
			if limit > 0 {
				q.Set("limit", strconv.Itoa(limit))
			}
			return c.show(cmd, http.MethodGet, pathWithQuery("/v1/lanes", q), nil, renderLanes)
		},
	}
	addClientFlags(lanes, &c)
	lanes.Flags().StringVar(&route, "route", "", "only this route's lanes")
	lanes.Flags().IntVar(&limit, "limit", 0, "at most this many lanes (default 20)")
	lanes.AddCommand(pauseCommand(), resumeCommand())
	return lanes
}

// pauseCommand is `herald lanes pause`.
func pauseCommand() *cobra.Command {
	var (
		c            clientFlags
		p            client.Pause
		until, route string
	)
	cmd := &cobra.Command{
		Use:   "pause --route R [--lane L] [--until T] [--reason S]",
		Short: "Pause a lane, or a whole route without --lane, for every tenant: its messages wait, QUEUED, until --until or a resume",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p.Route = route
			if until != "" {
				t, err := parseUntil(until, time.Now())
				if err != nil {
					return err
				}
				p.Until = t
			}
			return c.print(cmd, http.MethodPost, "/v1/lanes/pause", p)
		},
	}
	addClientFlags(cmd, &c)
	cmd.Flags().StringVar(&route, "route", "", "the route (required)")
	cmd.Flags().StringVar(&p.Lane, "lane", "", "the lane; none: the whole route")
	cmd.Flags().StringVar(&until, "until", "", "when the pause ends: an RFC 3339 time or a duration from now (30m); none: until resumed")
	cmd.Flags().StringVar(&p.Reason, "reason", "", "why, shown by explain and the lanes")
	_ = cmd.MarkFlagRequired("route")
	return cmd
}

// resumeCommand is `herald lanes resume`.
func resumeCommand() *cobra.Command {
	var (
		c           clientFlags
		route, lane string
	)
	cmd := &cobra.Command{
		Use: "resume --route R [--lane L]", Short: "Resume a lane, or a whole route without --lane", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := map[string]string{"route": route}
			if lane != "" {
				in["lane"] = lane
			}
			return c.print(cmd, http.MethodPost, "/v1/lanes/resume", in)
		},
	}
	addClientFlags(cmd, &c)
	cmd.Flags().StringVar(&route, "route", "", "the route (required)")
	cmd.Flags().StringVar(&lane, "lane", "", "the lane; none: the whole route's pause")
	_ = cmd.MarkFlagRequired("route")
	return cmd
}

// parseUntil reads --until: an RFC 3339 time, or a positive duration from
// now.
func parseUntil(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("--until %q: want an RFC 3339 time (2026-12-01T08:00:00Z) or a positive duration (30m)", s)
	}
	return now.Add(d), nil
}
