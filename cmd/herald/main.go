// Command herald is the durable delivery engine: the server, its client, the
// demo, the carrier simulators and the benchmarks.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

func main() {
	if err := rootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, errorLine(err))
		os.Exit(1)
	}
}

// errorLine is the line that reports err: its text after "herald: ",
// unless the text starts with herald's name already (the client's errors
// do).
func errorLine(err error) string {
	if msg := err.Error(); strings.HasPrefix(msg, "herald") {
		return msg
	}
	return "herald: " + err.Error()
}

func rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "herald",
		Short:         "herald is a durable delivery engine for outbound messages",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionLine(),
	}
	root.SetVersionTemplate("herald {{.Version}}\n")
	root.AddCommand(serveCommand(), demoCommand(), simCommand(), benchCommand(), benchNodeCommand(), configCommand(), versionCommand())
	root.AddCommand(clientCommands()...)
	return root
}
