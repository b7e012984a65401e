package webhooksink

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/heraldmq/herald/internal/simserve"
)

// ListenAndServe serves s on addr until ctx ends; then it shuts the server
// down and returns nil.
func ListenAndServe(ctx context.Context, addr string, s *Sink) error {
	return simserve.ListenAndServe(ctx, addr, s)
}

// Serve serves s on ln until ctx ends; then it shuts the server down and
// returns nil. It closes ln.
func Serve(ctx context.Context, ln net.Listener, s *Sink) error {
	return simserve.Serve(ctx, ln, s)
}

// GetStats reads the Stats of the sink served at baseURL (http://host:port).
func GetStats(ctx context.Context, client *http.Client, baseURL string) (Stats, error) {
	var st Stats
	err := getJSON(ctx, client, baseURL, "/stats", &st)
	return st, err
}

// GetRecords reads the Records of the sink served at baseURL.
func GetRecords(ctx context.Context, client *http.Client, baseURL string) ([]Record, error) {
	var rs []Record
	err := getJSON(ctx, client, baseURL, "/records", &rs)
	return rs, err
}

// getJSON GETs baseURL+path and decodes the JSON answer into v. A nil client
// means http.DefaultClient.
func getJSON(ctx context.Context, client *http.Client, baseURL, path string, v any) error {
	if client == nil {
		client = http.DefaultClient
	}
	u := strings.TrimSuffix(baseURL, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("webhooksink: GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("webhooksink: GET %s: %w", u, err)
	}
	return nil
}
