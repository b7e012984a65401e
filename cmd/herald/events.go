package main

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldmq/herald/client"
)

// eventsCommand is `herald events`: the dead outcome events, listed and
// sent again.
func eventsCommand() *cobra.Command {
	events := &cobra.Command{Use: "events", Short: "List or replay the outcome events a subscriber gave up on (dead)"}
	var lc, rc clientFlags
	var subscriber, since, until, cursor string
	var limit int
	list := &cobra.Command{
		Use: "ls [--subscriber NAME] [--since T] [--until T] [--limit N] [--cursor C]", Short: "List dead outcome events, newest first",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{"status": {"dead"}}
			for k, v := range map[string]string{"subscriber": subscriber, "since": since, "until": until, "cursor": cursor} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if limit != 0 {
				q.Set("limit", fmt.Sprint(limit))
			}
			return lc.print(cmd, http.MethodGet, pathWithQuery("/v1/outcome-events", q), nil)
		},
	}
	replay := &cobra.Command{
		Use:   "replay [ID...] [--subscriber NAME] [--since T] [--until T]",
		Short: "Send dead outcome events again: those named, or those the filter selects (none: every one)",
		RunE: func(cmd *cobra.Command, args []string) error {
			r := client.EventReplay{IDs: args, Subscriber: subscriber}
			if err := parseTimeFlags(timeFlag{"--since", since, &r.Since}, timeFlag{"--until", until, &r.Until}); err != nil {
				return err
			}
			return rc.show(cmd, http.MethodPost, "/v1/outcome-events/replay", r, counted("outcome event"))
		},
	}
	for _, c := range []struct {
		cmd *cobra.Command
		fl  *clientFlags
	}{{list, &lc}, {replay, &rc}} {
		addClientFlags(c.cmd, c.fl)
		c.cmd.Flags().StringVar(&subscriber, "subscriber", "", "only this configured subscriber's events")
		c.cmd.Flags().StringVar(&since, "since", "", "only events at or after this RFC 3339 time")
		c.cmd.Flags().StringVar(&until, "until", "", "only events before this RFC 3339 time")
	}
	list.Flags().IntVar(&limit, "limit", 0, "events a page, 1 to 1000 (default 100)")
	list.Flags().StringVar(&cursor, "cursor", "", "the next_cursor of the page before")
	events.AddCommand(list, replay)
	return events
}

// timeFlag is a flag that takes an RFC 3339 time, its value as given,
// and where the parsed time goes.
type timeFlag struct {
	flag, value string
	dst         *time.Time
}

// parseTimeFlags parses each flag that was given (its value not empty)
// into its dst; a value that is not an RFC 3339 time is an error naming
// the flag.
func parseTimeFlags(flags ...timeFlag) error {
	for _, f := range flags {
		if f.value == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, f.value)
		if err != nil {
			return fmt.Errorf("%s %q: want an RFC 3339 time (2025-01-02T15:04:05Z)", f.flag, f.value)
		}
		*f.dst = t
	}
	return nil
}
