package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// confirmBulk asks the person at the terminal to confirm an action on
// many messages, described by what ("purge every dead letter"). yes (the
// command's --yes) skips the question. Without a terminal on stdin there
// is nobody to ask: the action is refused, so that a script never hangs
// on a prompt nor acts on everything by mistake.
func confirmBulk(cmd *cobra.Command, what string, yes bool) error {
	if yes {
		return nil
	}
	in := cmd.InOrStdin()
	if !isTerminal(in) {
		return fmt.Errorf("refusing to %s without --yes: stdin is not a terminal to confirm it", what)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s? [y/N] ", capitalize(what))
	answer, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return fmt.Errorf("not confirmed: nothing done")
}

// isTerminal reports whether r is a terminal (not a pipe, a file or
// /dev/null).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
