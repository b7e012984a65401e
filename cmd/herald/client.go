package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldmq/herald/client"
)

// clientFlags are the flags of a command that talks to a herald server's
// HTTP API.
type clientFlags struct {
	server string
	key    string
	output string // table, json or yaml
}

func addClientFlags(cmd *cobra.Command, f *clientFlags) {
	cmd.Flags().StringVar(&f.server, "server", envOr("HERALD_SERVER", "http://127.0.0.1:8080"), "herald server URL; without a scheme, http (env HERALD_SERVER)")
	cmd.Flags().StringVar(&f.key, "key", os.Getenv("HERALD_API_KEY"), "API key (env HERALD_API_KEY)")
	cmd.Flags().StringVarP(&f.output, "output", "o", formatTable, "output format: table, json (the server's answer) or yaml")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// client returns a client of the server that f names.
func (f *clientFlags) client() (*client.Client, error) {
	return client.New(client.Config{URL: f.server, Key: f.key})
}

// print sends a request with in, when not nil, as its JSON body, and
// prints the server's answer in the format of -o (nothing for a 204): a
// table by its shape (renderAny), the JSON indented, or YAML. An answer
// outside 2xx is an error carrying the API's code (a *client.Error).
func (f *clientFlags) print(cmd *cobra.Command, method, path string, in any) error {
	return f.show(cmd, method, path, in, renderAny)
}

// show is print with the table that table renders.
func (f *clientFlags) show(cmd *cobra.Command, method, path string, in any, table render) error {
	if err := checkFormat(f.output); err != nil {
		return err
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	answer, err := call(cmd, c, method, path, in)
	if err != nil {
		return err
	}
	return f.write(cmd, answer, table)
}

// deleted sends a DELETE of path, whose answer is empty (204), and says
// in a table's stead that what is gone.
func (f *clientFlags) deleted(cmd *cobra.Command, path, what string) error {
	if err := f.print(cmd, http.MethodDelete, path, nil); err != nil {
		return err
	}
	if f.output == formatTable {
		fmt.Fprintln(cmd.OutOrStdout(), what+" deleted")
	}
	return nil
}

// write prints answer in the format of -o, with table for a table.
func (f *clientFlags) write(cmd *cobra.Command, answer json.RawMessage, table render) error {
	return writeAnswer(cmd.OutOrStdout(), f.output, answer, table)
}

// call sends a request with c and returns the server's JSON answer as it
// wrote it (empty for a 204).
func call(cmd *cobra.Command, c *client.Client, method, path string, in any) (json.RawMessage, error) {
	var answer json.RawMessage
	if err := c.Do(cmd.Context(), method, path, in, &answer); err != nil {
		return nil, err
	}
	return answer, nil
}

// printJSON prints answer indented, followed by a blank line; an empty
// answer prints nothing.
func printJSON(out io.Writer, answer json.RawMessage) error {
	if len(answer) == 0 {
		return nil
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, answer, "", "  "); err != nil {
		return err
	}
	pretty.WriteString("\n\n")
	_, err := out.Write(pretty.Bytes())
	return err
}

// pathWithQuery returns path followed by q, when q is not empty.
func pathWithQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

func clientCommands() []*cobra.Command {
	return []*cobra.Command{sendCommand(), getCommand(), lsCommand(), cancelCommand(), idCommand("replay", "Replay a DELIVERY_FAILED or CANCELLED message"), idCommand("send-now", "Send a scheduled (send_at) or TO_RETRY message now"), dlqCommand(), eventsCommand(),
		lanesCommand(), statsCommand(), healthCommand(),
		roomsCommand(), subsCommand(), publishCommand(), pullCommand(), ackCommand(), nackCommand(), routesCommand()}
}

func sendCommand() *cobra.Command {
	var c clientFlags
	var req client.SendRequest
	var payload, hexPayload, expiresAt, sendAt string
	cmd := &cobra.Command{
		Use:   "send --route NAME [--target T] (--text TEXT | --payload BASE64 | --hex HEX)",
		Short: "Send one message",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case hexPayload != "":
				b, err := hex.DecodeString(strings.ReplaceAll(hexPayload, " ", ""))
				if err != nil {
					return fmt.Errorf("--hex: %w", err)
				}
				req.Payload = b
			case payload != "":
				b, err := decodeBase64(payload)
				if err != nil {
					return fmt.Errorf("--payload: not valid base64")
				}
				if len(b) == 0 {
					return fmt.Errorf("--payload: decodes to no bytes")
				}
				req.Payload = b
			}
			if expiresAt != "" {
				t, err := time.Parse(time.RFC3339, expiresAt)
				if err != nil {
					return fmt.Errorf("--expires-at: %q is not an RFC 3339 time (e.g. 2025-01-02T15:04:05Z)", expiresAt)
				}
				req.ExpiresAt = t
			}
			if sendAt != "" {
				t, err := time.Parse(time.RFC3339, sendAt)
				if err != nil {
					return fmt.Errorf("--send-at: %q is not an RFC 3339 time (e.g. 2025-01-02T15:04:05Z)", sendAt)
				}
				req.SendAt = t
			}
			return c.print(cmd, http.MethodPost, "/v1/messages", req)
		},
	}
	addClientFlags(cmd, &c)
	f := cmd.Flags()
	f.StringVar(&req.Route, "route", "", "route name (required)")
	f.StringVar(&req.Target, "target", "", "recipient as the carrier knows it")
	f.StringVar(&req.Text, "text", "", "text to deliver")
	f.StringVar(&payload, "payload", "", "bytes to deliver, base64")
	f.StringVar(&hexPayload, "hex", "", "bytes to deliver, hex")
	f.StringToStringVar(&req.Params, "param", nil, "carrier option key=value (repeatable)")
	f.IntVar(&req.Priority, "priority", 0, "higher is sent sooner")
	f.StringVar(&req.Lane, "lane", "", "flow-control key")
	f.StringVar(&req.CorrelationID, "correlation-id", "", "your own id")
	f.StringVar(&req.IdempotencyKey, "idempotency-key", "", "repeat sends with this key return the first message")
	f.StringVar(&req.CoalesceKey, "coalesce-key", "", "replace a waiting older message with this key")
	f.StringVar(&expiresAt, "expires-at", "", "RFC 3339 time after which the message fails")
	f.StringVar(&sendAt, "send-at", "", "RFC 3339 time before which the message is not sent (at most 366 days ahead)")
	_ = cmd.MarkFlagRequired("route")
	return cmd
}

// decodeBase64 decodes standard base64, padded or not, as the server does.
func decodeBase64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return base64.RawStdEncoding.DecodeString(s)
	}
	return b, nil
}

func getCommand() *cobra.Command {
	var c clientFlags
	var explain bool
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "Show a message and its timeline (ID: the id, or a unique prefix of 8 characters or more)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if explain {
				return c.showMessage(cmd, http.MethodGet, args[0], "/explain", renderAny)
			}
			return c.showMessage(cmd, http.MethodGet, args[0], "", renderMessage)
		},
	}
	addClientFlags(cmd, &c)
	cmd.Flags().BoolVar(&explain, "explain", false, "say why the message is or is not moving")
	return cmd
}

func lsCommand() *cobra.Command {
	var c clientFlags
	var status, route, target, correlation, cursor string
	var limit int
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List messages, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			for k, v := range map[string]string{"status": status, "route": route, "target": target, "correlation_id": correlation, "cursor": cursor} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if limit > 0 {
				q.Set("limit", strconv.Itoa(limit))
			}
			return c.show(cmd, http.MethodGet, pathWithQuery("/v1/messages", q), nil, renderMessages)
		},
	}
	addClientFlags(cmd, &c)
	f := cmd.Flags()
	f.StringVar(&status, "status", "", "only this status")
	f.StringVar(&route, "route", "", "only this route")
	f.StringVar(&target, "target", "", "only this target, matched exactly")
	f.StringVar(&correlation, "correlation-id", "", "only this correlation id")
	f.StringVar(&cursor, "cursor", "", "next_cursor of the previous page")
	f.IntVar(&limit, "limit", 0, "page size (default 100)")
	return cmd
}

func idCommand(verb, short string) *cobra.Command {
	var c clientFlags
	cmd := &cobra.Command{
		Use:   verb + " ID",
		Short: short + " (ID: the id, or a unique prefix of 8 characters or more)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.showMessage(cmd, http.MethodPost, args[0], "/"+verb, renderAny)
		},
	}
	addClientFlags(cmd, &c)
	return cmd
}

func dlqCommand() *cobra.Command {
	dlq := &cobra.Command{Use: "dlq", Short: "List, replay or purge dead letters; fail an orphaned route's messages"}
	var lc, rc, pc clientFlags
	var route, target, reason, before, cursor, since, until string
	var rate float64
	var limit int
	var yes bool
	list := &cobra.Command{
		Use: "ls [--route R] [--limit N] [--cursor C]", Short: "List dead letters, newest first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			for k, v := range map[string]string{"route": route, "cursor": cursor} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if limit > 0 {
				q.Set("limit", strconv.Itoa(limit))
			}
			return lc.show(cmd, http.MethodGet, pathWithQuery("/v1/dead-letters", q), nil, renderDeadLetters)
		},
	}
	list.Flags().IntVar(&limit, "limit", 0, "page size, 1 to 1000 (default 100)")
	list.Flags().StringVar(&cursor, "cursor", "", "next_cursor of the previous page")
	replay := &cobra.Command{
		Use: "replay", Short: "Replay dead letters at a bounded rate", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := client.ReplayFilter{Route: route, Target: target, Reason: reason}
			if err := parseTimeFlags(timeFlag{"--since", since, &f.Since}, timeFlag{"--until", until, &f.Until}); err != nil {
				return err
			}
			if err := confirmBulk(cmd, "replay "+deadLettersOf(route, target, reason, since, until), yes); err != nil {
				return err
			}
			if rate > 0 {
				f.RatePerS = rate
			}
			return rc.show(cmd, http.MethodPost, "/v1/dead-letters/replay", f, counted("dead letter"))
		},
	}
	purge := &cobra.Command{
		Use: "purge", Short: "Delete dead letters", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := confirmBulk(cmd, "delete "+deadLettersOf(route, "", "", "", before), yes); err != nil {
				return err
			}
			q := url.Values{}
			if route != "" {
				q.Set("route", route)
			}
			if before != "" {
				q.Set("before", before)
			}
			return pc.show(cmd, http.MethodDelete, pathWithQuery("/v1/dead-letters", q), nil, counted("dead letter"))
		},
	}
	for _, c := range []struct {
		cmd *cobra.Command
		fl  *clientFlags
	}{{list, &lc}, {replay, &rc}, {purge, &pc}} {
		addClientFlags(c.cmd, c.fl)
		c.cmd.Flags().StringVar(&route, "route", "", "only this route")
	}
	replay.Flags().StringVar(&target, "target", "", "only this target, matched exactly (a room's subscription, with --route room:NAME)")
	replay.Flags().StringVar(&reason, "reason", "", "only dead letters whose last error contains this")
	replay.Flags().StringVar(&since, "since", "", "only dead letters that failed at or after this RFC 3339 time")
	replay.Flags().StringVar(&until, "until", "", "only dead letters that failed before this RFC 3339 time")
	replay.Flags().Float64Var(&rate, "rate", 0, "at most this many per second")
	purge.Flags().StringVar(&before, "before", "", "only those last updated before this RFC 3339 time")
	for _, c := range []*cobra.Command{replay, purge} {
		c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation (needed without a terminal)")
	}
	dlq.AddCommand(list, replay, purge, failOrphansCommand())
	return dlq
}

// deadLettersOf describes the dead letters a bulk action's filter selects,
// for its confirmation.
func deadLettersOf(route, target, reason, since, before string) string {
	var of []string
	if route != "" {
		of = append(of, "of route "+route)
	}
	if target != "" {
		of = append(of, "to "+target)
	}
	if reason != "" {
		of = append(of, fmt.Sprintf("whose error contains %q", reason))
	}
	if since != "" {
		of = append(of, "last updated at or after "+since)
	}
	if before != "" {
		of = append(of, "last updated before "+before)
	}
	if len(of) == 0 {
		return "every dead letter"
	}
	return "the dead letters " + strings.Join(of, ", ")
}
