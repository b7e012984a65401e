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
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// apiClient talks to a herald server's HTTP API.
type apiClient struct {
	server string
	key    string
	http   *http.Client
}

func addClientFlags(cmd *cobra.Command, c *apiClient) {
	cmd.Flags().StringVar(&c.server, "server", envOr("HERALD_SERVER", "http://127.0.0.1:8080"), "herald server URL (env HERALD_SERVER)")
	cmd.Flags().StringVar(&c.key, "key", os.Getenv("HERALD_API_KEY"), "API key (env HERALD_API_KEY)")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// do sends a request and prints the JSON answer indented; a non-2xx answer is an error.
func (c *apiClient) do(out io.Writer, method, path string, body any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, strings.TrimRight(c.server, "/")+path, rd)
	if err != nil {
		return err
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.http
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(data)))
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, data, "", "  ") == nil {
		data = append(pretty.Bytes(), '\n')
	}
	_, err = out.Write(data)
	return err
}

func clientCommands() []*cobra.Command {
	return []*cobra.Command{sendCommand(), getCommand(), lsCommand(), idCommand("cancel", "Cancel a QUEUED or TO_RETRY message"), idCommand("replay", "Replay a DELIVERY_FAILED or CANCELLED message"), dlqCommand(),
		roomsCommand(), subsCommand(), publishCommand(), pullCommand()}
}

func sendCommand() *cobra.Command {
	var c apiClient
	var req struct {
		Route          string            `json:"route"`
		Target         string            `json:"target,omitempty"`
		Payload        string            `json:"payload,omitempty"`
		Text           string            `json:"text,omitempty"`
		Params         map[string]string `json:"params,omitempty"`
		Priority       int               `json:"priority,omitempty"`
		Lane           string            `json:"lane,omitempty"`
		CorrelationID  string            `json:"correlation_id,omitempty"`
		IdempotencyKey string            `json:"idempotency_key,omitempty"`
		CoalesceKey    string            `json:"coalesce_key,omitempty"`
		ExpiresAt      string            `json:"expires_at,omitempty"`
	}
	var hexPayload string
	cmd := &cobra.Command{
		Use:   "send --route NAME [--target T] (--text TEXT | --payload BASE64 | --hex HEX)",
		Short: "Send one message",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if hexPayload != "" {
				b, err := hex.DecodeString(strings.ReplaceAll(hexPayload, " ", ""))
				if err != nil {
					return fmt.Errorf("--hex: %w", err)
				}
				req.Payload = base64.StdEncoding.EncodeToString(b)
			}
			return c.do(cmd.OutOrStdout(), http.MethodPost, "/v1/messages", req)
		},
	}
	addClientFlags(cmd, &c)
	f := cmd.Flags()
	f.StringVar(&req.Route, "route", "", "route name (required)")
	f.StringVar(&req.Target, "target", "", "recipient as the carrier knows it")
	f.StringVar(&req.Text, "text", "", "text to deliver")
	f.StringVar(&req.Payload, "payload", "", "bytes to deliver, base64")
	f.StringVar(&hexPayload, "hex", "", "bytes to deliver, hex")
	f.StringToStringVar(&req.Params, "param", nil, "carrier option key=value (repeatable)")
	f.IntVar(&req.Priority, "priority", 0, "higher is sent sooner")
	f.StringVar(&req.Lane, "lane", "", "flow-control key")
	f.StringVar(&req.CorrelationID, "correlation-id", "", "your own id")
	f.StringVar(&req.IdempotencyKey, "idempotency-key", "", "repeat sends with this key return the first message")
	f.StringVar(&req.CoalesceKey, "coalesce-key", "", "replace a waiting older message with this key")
	f.StringVar(&req.ExpiresAt, "expires-at", "", "RFC 3339 time after which the message fails")
	_ = cmd.MarkFlagRequired("route")
	return cmd
}

func getCommand() *cobra.Command {
	var c apiClient
	var explain bool
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "Show a message and its timeline",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "/v1/messages/" + url.PathEscape(args[0])
			if explain {
				path += "/explain"
			}
			return c.do(cmd.OutOrStdout(), http.MethodGet, path, nil)
		},
	}
	addClientFlags(cmd, &c)
	cmd.Flags().BoolVar(&explain, "explain", false, "say why the message is or is not moving")
	return cmd
}

func lsCommand() *cobra.Command {
	var c apiClient
	var status, route, correlation, cursor string
	var limit int
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List messages, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			for k, v := range map[string]string{"status": status, "route": route, "correlation_id": correlation, "cursor": cursor} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if limit > 0 {
				q.Set("limit", fmt.Sprint(limit))
			}
			return c.do(cmd.OutOrStdout(), http.MethodGet, "/v1/messages?"+q.Encode(), nil)
		},
	}
	addClientFlags(cmd, &c)
	f := cmd.Flags()
	f.StringVar(&status, "status", "", "only this status")
	f.StringVar(&route, "route", "", "only this route")
	f.StringVar(&correlation, "correlation-id", "", "only this correlation id")
	f.StringVar(&cursor, "cursor", "", "next_cursor of the previous page")
	f.IntVar(&limit, "limit", 0, "page size (default 100)")
	return cmd
}

func idCommand(verb, short string) *cobra.Command {
	var c apiClient
	cmd := &cobra.Command{
		Use:   verb + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.do(cmd.OutOrStdout(), http.MethodPost, "/v1/messages/"+url.PathEscape(args[0])+"/"+verb, nil)
		},
	}
	addClientFlags(cmd, &c)
	return cmd
}

func dlqCommand() *cobra.Command {
	dlq := &cobra.Command{Use: "dlq", Short: "List, replay or purge dead letters"}
	var lc, rc, pc apiClient
	var route, reason, before string
	var rate float64
	list := &cobra.Command{
		Use: "ls", Short: "List dead letters", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return lc.do(cmd.OutOrStdout(), http.MethodGet, "/v1/dead-letters?route="+url.QueryEscape(route), nil)
		},
	}
	replay := &cobra.Command{
		Use: "replay", Short: "Replay dead letters at a bounded rate", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			body := map[string]any{}
			if route != "" {
				body["route"] = route
			}
			if reason != "" {
				body["reason"] = reason
			}
			if rate > 0 {
				body["rate_per_s"] = rate
			}
			return rc.do(cmd.OutOrStdout(), http.MethodPost, "/v1/dead-letters/replay", body)
		},
	}
	purge := &cobra.Command{
		Use: "purge", Short: "Delete dead letters", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			if route != "" {
				q.Set("route", route)
			}
			if before != "" {
				q.Set("before", before)
			}
			return pc.do(cmd.OutOrStdout(), http.MethodDelete, "/v1/dead-letters?"+q.Encode(), nil)
		},
	}
	for _, c := range []struct {
		cmd *cobra.Command
		cl  *apiClient
	}{{list, &lc}, {replay, &rc}, {purge, &pc}} {
		addClientFlags(c.cmd, c.cl)
		c.cmd.Flags().StringVar(&route, "route", "", "only this route")
	}
	replay.Flags().StringVar(&reason, "reason", "", "only dead letters whose last error contains this")
	replay.Flags().Float64Var(&rate, "rate", 0, "at most this many per second")
	purge.Flags().StringVar(&before, "before", "", "only those last updated before this RFC 3339 time")
	dlq.AddCommand(list, replay, purge)
	return dlq
}
