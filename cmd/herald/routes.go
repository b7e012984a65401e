package main

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/heraldmq/herald"
)

// routesCommand is `herald routes [--orphaned]`.
func routesCommand() *cobra.Command {
	var (
		c        clientFlags
		orphaned bool
	)
	cmd := &cobra.Command{
		Use:   "routes [--orphaned]",
		Short: "List the configured routes with their messages by status, and the orphaned routes (missing from the configuration, their messages held)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !orphaned {
				return c.show(cmd, http.MethodGet, "/v1/routes", nil, renderRoutes)
			}
			if err := checkFormat(c.output); err != nil {
				return err
			}
			cl, err := c.client()
			if err != nil {
				return err
			}
			answer, err := call(cmd, cl, http.MethodGet, "/v1/routes", nil)
			if err != nil {
				return err
			}
			var v herald.RoutesView
			if err := json.Unmarshal(answer, &v); err != nil {
				return err
			}
			only, err := json.Marshal(map[string]any{"orphaned": v.Orphaned})
			if err != nil {
				return err
			}
			return c.write(cmd, only, renderRoutes)
		},
	}
	addClientFlags(cmd, &c)
	cmd.Flags().BoolVar(&orphaned, "orphaned", false, "only the orphaned routes")
	return cmd
}

// failOrphansCommand is `herald dlq fail-orphans --route X [--yes]`.
func failOrphansCommand() *cobra.Command {
	var (
		c     clientFlags
		route string
		yes   bool
	)
	cmd := &cobra.Command{
		Use:   "fail-orphans --route X [--yes]",
		Short: "Fail the pending messages of a route missing from the configuration (herald holds them until it is back)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := confirmBulk(cmd, fmt.Sprintf("fail every pending message of route %s", route), yes); err != nil {
				return err
			}
			return c.show(cmd, http.MethodPost, "/v1/dead-letters/fail-orphans", map[string]string{"route": route}, counted("message"))
		},
	}
	addClientFlags(cmd, &c)
	cmd.Flags().StringVar(&route, "route", "", "the orphaned route (required)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation (needed without a terminal)")
	_ = cmd.MarkFlagRequired("route")
	return cmd
}
