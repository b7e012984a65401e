// Command herald is the durable delivery engine: the server, its client, the
// demo, the carrier simulators and the benchmarks.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := rootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "herald:", err)
		os.Exit(1)
	}
}

func rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "herald",
		Short:         "herald is a durable delivery engine for outbound messages",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(serveCommand(), demoCommand(), simCommand(), benchCommand(), benchNodeCommand())
	root.AddCommand(clientCommands()...)
	return root
}
