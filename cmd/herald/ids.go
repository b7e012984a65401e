package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heraldmq/herald/client"
)

// A message's id may be given by a unique prefix of it, as the demo and
// the tables of people's terminals shorten them.
const (
	// minIDPrefix is the shortest prefix taken: ids are time-ordered, so
	// fewer characters name every message of a long stretch of time.
	minIDPrefix = 8
	// idLength is the length of a whole id, which is taken as it is.
	idLength = 36
)

// messageID returns the id of the message that arg names: arg itself
// when it is as long as an id, else the one message whose id starts with
// arg (at least minIDPrefix characters of it).
func (f *clientFlags) messageID(cmd *cobra.Command, c *client.Client, arg string) (string, error) {
	if len(arg) >= idLength {
		return arg, nil
	}
	if len(arg) < minIDPrefix {
		return "", fmt.Errorf("id %q is too short: give the whole id or its first %d characters at least", arg, minIDPrefix)
	}
	const shown = 3
	page, err := c.List(cmd.Context(), client.ListFilter{IDPrefix: arg, Limit: shown + 1})
	if err != nil {
		return "", err
	}
	switch n := len(page.Messages); n {
	case 0:
		return "", fmt.Errorf("no message's id starts with %s", arg)
	case 1:
		return page.Messages[0].ID, nil
	default:
		var ids []string
		for _, m := range page.Messages[:min(n, shown)] {
			ids = append(ids, m.ID)
		}
		if n > shown {
			ids = append(ids, "…")
		}
		return "", fmt.Errorf("id prefix %s names several messages (%s): give more of its characters", arg, strings.Join(ids, ", "))
	}
}

// showMessage is show of the path of the message that arg names (an id
// or its unique prefix) followed by tail ("", "/explain", "/cancel").
func (f *clientFlags) showMessage(cmd *cobra.Command, method, arg, tail string, table render) error {
	if err := checkFormat(f.output); err != nil {
		return err
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	id, err := f.messageID(cmd, c, arg)
	if err != nil {
		return err
	}
	answer, err := call(cmd, c, method, "/v1/messages/"+url.PathEscape(id)+tail, nil)
	if err != nil {
		return err
	}
	return f.write(cmd, answer, table)
}
