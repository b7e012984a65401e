package main

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/client"
)

// cancelCommand is herald cancel: one message by its ID, or, with no ID,
// the waiting messages of a route that match the filters (the bulk form,
// confirmed in a terminal or by --yes).
func cancelCommand() *cobra.Command {
	var c clientFlags
	var f client.CancelFilter
	var status, before string
	var yes bool
	cmd := &cobra.Command{
		Use:   "cancel (ID | --route R [--lane L] [--target T] [--status S] [--before T] [--yes])",
		Short: "Cancel a QUEUED or TO_RETRY message, or a route's waiting messages",
		Long: "With an ID (whole, or a unique prefix of 8 characters or more): cancel that message (QUEUED or TO_RETRY). With no ID: cancel the waiting messages of --route\n" +
			"that match every filter given, each only if it still waits (none in flight is touched); this asks for\n" +
			"confirmation in a terminal, and needs --yes without one.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bulk := f.Route != "" || f.Lane != "" || f.Target != "" || status != "" || before != ""
			if len(args) == 1 {
				if bulk {
					return fmt.Errorf("give an ID or the filters (--route ...), not both")
				}
				return c.showMessage(cmd, http.MethodPost, args[0], "/cancel", renderAny)
			}
			if f.Route == "" {
				return fmt.Errorf("give the ID of a message to cancel, or --route (and filters) to cancel a route's waiting messages")
			}
			if status != "" {
				s, err := herald.ParseStatus(strings.ToUpper(status))
				if err != nil || !s.Waiting() {
					return fmt.Errorf("--status: %q: want QUEUED or TO_RETRY", status)
				}
				f.Status = s
			}
			if before != "" {
				t, err := time.Parse(time.RFC3339, before)
				if err != nil {
					return fmt.Errorf("--before: %q is not an RFC 3339 time (e.g. 2025-01-02T15:04:05Z)", before)
				}
				f.Before = t
			}
			if err := confirmBulk(cmd, "cancel "+waitingOf(f, status, before), yes); err != nil {
				return err
			}
			return c.show(cmd, http.MethodPost, "/v1/messages/cancel", f, counted("message"))
		},
	}
	addClientFlags(cmd, &c)
	fl := cmd.Flags()
	fl.StringVar(&f.Route, "route", "", "bulk: the route whose waiting messages to cancel")
	fl.StringVar(&f.Lane, "lane", "", "bulk: only this lane")
	fl.StringVar(&f.Target, "target", "", "bulk: only this target")
	fl.StringVar(&status, "status", "", "bulk: only QUEUED or only TO_RETRY (default both)")
	fl.StringVar(&before, "before", "", "bulk: only those created before this RFC 3339 time")
	fl.BoolVarP(&yes, "yes", "y", false, "bulk: do not ask for confirmation (needed without a terminal)")
	return cmd
}

// waitingOf describes the messages a bulk cancel's filter selects, for its
// confirmation.
func waitingOf(f client.CancelFilter, status, before string) string {
	what := "the waiting messages"
	if status != "" {
		what = "the " + strings.ToUpper(status) + " messages"
	}
	what += " of route " + f.Route
	for _, c := range []struct{ name, v string }{{"lane", f.Lane}, {"target", f.Target}, {"created before", before}} {
		if c.v != "" {
			what += ", " + c.name + " " + c.v
		}
	}
	return what
}
