package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heraldmq/herald/config"
)

func configCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Work with herald's config file",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(configCheckCommand())
	return cmd
}

func configCheckCommand() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "check --config FILE",
		Short: "Validate a config file without starting: exit 0 when it is valid, 1 with each problem on a line",
		Long: `Reads the config file as herald serve would, checks every key (and that the
environment variables its *_env keys name are set, and their values valid),
builds its carriers without connecting to anything, and prints "ok" with a
summary, or each problem on a line of its own, naming its key.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return errors.New("config check: --config FILE is required")
			}
			if err := checkConfig(path, cmd.OutOrStdout()); err != nil {
				for _, line := range strings.Split(err.Error(), "\n") {
					fmt.Fprintln(cmd.ErrOrStderr(), line)
				}
				return fmt.Errorf("config check: %s is not valid", path)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", "", "YAML config file (see docs/CONFIG.md)")
	return cmd
}

// checkConfig validates the config file at path as herald serve reads it,
// and builds its routes and subscribers (which checks the secrets their
// variables hold), then closes them; it writes a summary to w when the
// file is valid.
func checkConfig(path string, w io.Writer) error {
	f, err := loadConfig(path)
	if err != nil {
		return err
	}
	routes, err := buildRoutes(f, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	for _, r := range routes {
		if c, ok := r.Carrier.(io.Closer); ok {
			c.Close()
		}
	}
	if _, err := buildSubscribers(f); err != nil {
		return err
	}
	spec, _ := config.ParseStore(f.Store) // valid: Load checked it
	fmt.Fprintf(w, "%s: ok (%d routes, %d subscribers, %d API keys, store %s)\n", path, len(f.Routes), len(f.Subscribers), len(f.APIKeys), spec.Kind)
	return nil
}
