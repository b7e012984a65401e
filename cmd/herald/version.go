package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is herald's version as a release build sets it
// (-ldflags "-X main.version=v1.2.3"); empty, the build info's.
var version string

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print herald's version, the commit it was built from, and the Go toolchain",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "herald "+versionLine())
		},
	}
}

// versionLine describes this binary: its version (the release's, or the
// module's as go install records it, else "devel"), then the commit, its
// time and whether the tree had changes, the Go version and the platform.
func versionLine() string {
	v, commit, at, modified := version, "", "", false
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	line := v
	if commit != "" {
		line += fmt.Sprintf(" (commit %.12s", commit)
		if at != "" {
			line += ", " + at
		}
		if modified {
			line += ", with local changes"
		}
		line += ")"
	}
	return fmt.Sprintf("%s %s %s/%s", line, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
