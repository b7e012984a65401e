package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"gopkg.in/yaml.v3"
)

var update = flag.Bool("update", false, "rewrite the golden files of the CLI's tables (testdata/*.golden)")

// Canned answers of a server, so that the tables do not depend on times
// or ids.
const (
	idA = "01932c4e-8a10-7c2b-9f00-3e5d2a1b0c01"
	idB = "01932c4e-9b22-7d3c-a011-4f6e3b2c1d02"
	idC = "01932c4f-0c33-7e4d-b122-506f4c3d2e03"

	messageA = `{"id":"` + idA + `","route":"lora","target":"70b3d57ed0001a2b","lane":"gw-1","status":"TO_RETRY","attempt":2,"max_attempts":5,` +
		`"priority":0,"correlation_id":"order-4711","created_at":"2025-01-02T03:04:05.123456Z","updated_at":"2025-01-02T03:05:06.5Z",` +
		`"next_attempt_at":"2025-01-02T03:06:06Z","deadline":null,"expires_at":null,"external_id":"","last_error":"gateway gw-1 answered 503 Service Unavailable: the downlink queue of the device is full, try again later",` +
		`"payload":"AQID","params":{"f_port":"1","confirmed":"true"},"timeline":[` +
		`{"at":"2025-01-02T03:04:05.123Z","from":"","to":"QUEUED","attempt":0,"reason":"created"},` +
		`{"at":"2025-01-02T03:04:05.2Z","from":"QUEUED","to":"SENT_TO_NS","attempt":1,"reason":"claimed"},` +
		`{"at":"2025-01-02T03:04:06Z","from":"SENT_TO_NS","to":"TO_RETRY","attempt":1,"reason":"send failed","answer":"503","error":"gateway gw-1 answered 503 Service Unavailable: the downlink queue is full","duration_ms":812},` +
		`{"at":"2025-01-02T03:05:06Z","from":"TO_RETRY","to":"SENT_TO_NS","attempt":2,"reason":"retry"},` +
		`{"at":"2025-01-02T03:05:06.5Z","from":"SENT_TO_NS","to":"TO_RETRY","attempt":2,"reason":"send failed","answer":"500","error":"internal error","duration_ms":1530}]}`
	messageB = `{"id":"` + idB + `","route":"chat","target":"-1001234567890123456789","lane":"","status":"DELIVERY_SUCCESSFUL","attempt":1,"max_attempts":3,` +
		`"priority":5,"correlation_id":"","created_at":"2025-01-02T03:04:05Z","updated_at":"2025-01-02T03:04:07Z",` +
		`"next_attempt_at":null,"deadline":null,"expires_at":null,"external_id":"812","last_error":"","text":"hello","timeline":[]}`
	messageC = `{"id":"` + idC + `","route":"a-route-with-a-rather-long-name","target":"","lane":"","status":"DELIVERY_FAILED","attempt":5,"max_attempts":5,` +
		`"priority":0,"correlation_id":"","created_at":"2025-01-02T03:00:00Z","updated_at":"2025-01-02T03:10:00Z",` +
		`"next_attempt_at":null,"deadline":null,"expires_at":null,"external_id":"","last_error":"POST https://hooks.example.com/in: 400 Bad Request","text":"x","timeline":[]}`

	listAnswer       = `{"messages":[` + messageC + `,` + messageB + `,` + messageA + `],"next_cursor":"` + idA + `"}`
	deadLetterAnswer = `{"messages":[` + messageC + `],"next_cursor":""}`
	statsAnswer      = `{"by_status":{"QUEUED":3,"SENT_TO_NS":1,"DELIVERED_TO_NS":2,"TO_RETRY":1,"DELIVERY_SUCCESSFUL":120,"DELIVERY_FAILED":4,"CANCELLED":0},` +
		`"by_route":{"chat":{"DELIVERY_SUCCESSFUL":100,"DELIVERY_FAILED":1},"lora":{"QUEUED":3,"SENT_TO_NS":1,"DELIVERED_TO_NS":2,"TO_RETRY":1,"DELIVERY_SUCCESSFUL":20,"DELIVERY_FAILED":3}},` +
		`"oldest_queued_seconds":93.2,"success_rate":0.967741935483871,"latency_p50_ms":120.4,"latency_p99_ms":2345.6,"dead_letters":4,"waiting":4,` +
		`"enqueued":131,"succeeded":120,"retried":7,"dead_lettered":4,"deduplicated":0,"coalesced":1}`
	lanesAnswer = `{"lanes":[{"route":"gw","lane":"gateway-2","queued":2,"in_flight":1,"paused_until":null,"pause_reason":"","next_at":null},` +
		`{"route":"gw","lane":"gateway-1","queued":1,"in_flight":0,"paused_until":"2025-01-02T03:05:05Z","pause_reason":"backpressure","next_at":null}],` +
		`"pauses":[{"route":"gw","lane":"gateway-3","until":null,"reason":"maintenance of the gateway","at":"2025-01-02T03:00:00Z"}]}`
	routesAnswer = `{"routes":[{"route":"chat","counts":{"DELIVERY_SUCCESSFUL":100,"DELIVERY_FAILED":1},"paused":null},` +
		`{"route":"lora","counts":{"QUEUED":3,"SENT_TO_NS":1,"TO_RETRY":1},"paused":{"route":"lora","lane":"","until":"2025-01-02T04:00:00Z","reason":"","at":"2025-01-02T03:00:00Z"}}],` +
		`"orphaned":[{"route":"lora-old","messages":5}]}`
	pulledAnswer = `{"deliveries":[{"id":"` + idA + `","lease_id":"` + idB + `","event_id":"` + idC + `","type":"order.created","version":"2",` +
		`"data":{"order":4711,"lines":[{"sku":"A-1","qty":2}]},"correlation_id":"","attempt":0}]}`
	explainAnswer = `{"id":"` + idA + `","status":"TO_RETRY","reason":"backoff","detail":"waits for its next attempt after a failure","until":"2025-01-02T03:06:06Z","blocking_ids":[]}`
)

// healthAnswer is a health of status warning, with statsAnswer's figures.
var healthAnswer = `{"status":"warning","message":"4 dead letters: see herald dlq ls","warnings":["dead_letters"],` + statsAnswer[1:]

// cannedServer answers each path (with its query) with its JSON, and
// counts the requests it had.
func cannedServer(t *testing.T, answers map[string]string) (string, *atomic.Int64) {
	t.Helper()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		answer, ok := answers[r.Method+" "+r.URL.RequestURI()]
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"code":"not_found","message":"no canned answer for `+r.Method+" "+r.URL.RequestURI()+`"}}`)
			return
		}
		if answer == "" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &requests
}

// cliOutput runs the command line args against base and returns what it printed.
func cliOutput(t *testing.T, base string, args ...string) (string, error) {
	t.Helper()
	cmd := rootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs(append(args, "--server", base, "--key", "k1"))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// outputCases are the commands whose output the tests check, each with
// the request it makes and the canned answer.
var outputCases = []struct {
	name    string
	args    []string
	request string
	answer  string
}{
	{"ls", []string{"ls", "--route", "lora", "--target", "70b3d57ed0001a2b"}, "GET /v1/messages?route=lora&target=70b3d57ed0001a2b", listAnswer},
	{"get", []string{"get", idA}, "GET /v1/messages/" + idA, messageA},
	{"get_no_timeline", []string{"get", idB}, "GET /v1/messages/" + idB, messageB},
	{"explain", []string{"get", idA, "--explain"}, "GET /v1/messages/" + idA + "/explain", explainAnswer},
	{"cancel", []string{"cancel", idA}, "POST /v1/messages/" + idA + "/cancel", messageA},
	{"cancel_bulk", []string{"cancel", "--route", "lora", "--yes"}, "POST /v1/messages/cancel", `{"cancelled":3}`},
	{"send_now", []string{"send-now", idA}, "POST /v1/messages/" + idA + "/send-now", messageA},
	{"dlq_ls", []string{"dlq", "ls", "--limit", "1", "--cursor", idC}, "GET /v1/dead-letters?cursor=" + idC + "&limit=1", deadLetterAnswer},
	{"dlq_replay", []string{"dlq", "replay", "--yes"}, "POST /v1/dead-letters/replay", `{"replayed":3}`},
	{"stats", []string{"stats"}, "GET /v1/stats", statsAnswer},
	{"health", []string{"health"}, "GET /v1/health", healthAnswer},
	{"lanes", []string{"lanes", "--route", "gw"}, "GET /v1/lanes?route=gw", lanesAnswer},
	{"routes", []string{"routes"}, "GET /v1/routes", routesAnswer},
	{"lanes_none", []string{"lanes", "--route", "none"}, "GET /v1/lanes?route=none", `{"lanes":[],"pauses":[]}`},
	{"pull", []string{"pull", "sub-1"}, "POST /v1/subscriptions/sub-1/pull", pulledAnswer},
	{"ack", []string{"ack", "sub-1", idB}, "POST /v1/subscriptions/sub-1/ack", `{"acked":1,"lost":[]}`},
	{"rooms_rm", []string{"rooms", "rm", "orders"}, "DELETE /v1/rooms/orders", ""},
	{"events_none", []string{"events", "ls"}, "GET /v1/outcome-events?status=dead", `{"events":[],"next_cursor":""}`},
}

// outputServer is a server answering the requests of outputCases.
func outputServer(t *testing.T) string {
	answers := map[string]string{}
	for _, c := range outputCases {
		answers[c.request] = c.answer
	}
	base, _ := cannedServer(t, answers)
	return base
}

// TestTables checks the tables of the CLI against the golden files in
// testdata (go test -run TestTables -update rewrites them): ls, get (with
// the carrier's answers on the timeline), stats, and the other commands.
func TestTables(t *testing.T) {
	base := outputServer(t)
	for _, c := range outputCases {
		t.Run(c.name, func(t *testing.T) {
			out, err := cliOutput(t, base, c.args...)
			if err != nil {
				t.Fatalf("herald %s: %v", strings.Join(c.args, " "), err)
			}
			golden := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestTables -update writes it)", err)
			}
			if out != string(want) {
				t.Errorf("herald %s printed:\n%s\nwant (%s):\n%s", strings.Join(c.args, " "), out, golden, want)
			}
			// Rows of tables fit 120 columns; a key and value line (its key
			// in lower case) shows a long value whole, and may wrap.
			for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if n := len([]rune(line)); n > 120 && (line[0] < 'a' || line[0] > 'z') {
					t.Errorf("line %d is %d characters wide: %q", i+1, n, line)
				}
			}
		})
	}
}

// TestOutputJSONAndYAML: -o json prints the server's answer (the same
// JSON), -o yaml a YAML document of the same values.
func TestOutputJSONAndYAML(t *testing.T) {
	base := outputServer(t)
	for _, c := range outputCases {
		if c.answer == "" { // a 204: nothing to print
			for _, format := range []string{"json", "yaml"} {
				if out, err := cliOutput(t, base, append(c.args, "-o", format)...); out != "" || err != nil {
					t.Errorf("herald %s -o %s: %v, printed %q; want nothing", strings.Join(c.args, " "), format, err, out)
				}
			}
			continue
		}
		var want any
		if err := json.Unmarshal([]byte(c.answer), &want); err != nil {
			t.Fatal(err)
		}
		out, err := cliOutput(t, base, append(c.args, "-o", "json")...)
		var got any
		if err != nil || json.Unmarshal([]byte(out), &got) != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("herald %s -o json: %v\n%s\nwant the server's answer %s", strings.Join(c.args, " "), err, out, c.answer)
		}
		out, err = cliOutput(t, base, append(c.args, "--output", "yaml")...)
		var doc any
		if err != nil || yaml.Unmarshal([]byte(out), &doc) != nil {
			t.Fatalf("herald %s -o yaml: %v\n%s", strings.Join(c.args, " "), err, out)
		}
		b, err := json.Marshal(doc)
		if err != nil || json.Unmarshal(b, &got) != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("herald %s -o yaml: %v; it reads as %s, want %s", strings.Join(c.args, " "), err, b, c.answer)
		}
	}
}

// TestBadOutput: an -o that is not a format is an error naming it, and
// nothing is asked of the server.
func TestBadOutput(t *testing.T) {
	base, requests := cannedServer(t, nil)
	for _, args := range [][]string{{"ls"}, {"get", idA}, {"cancel", idA}, {"pull", "sub-1"}, {"stats"}} {
		_, err := cliOutput(t, base, append(args, "-o", "xml")...)
		if err == nil || !strings.Contains(err.Error(), `-o "xml": want table, json or yaml`) {
			t.Errorf("herald %s -o xml: %v, want an error naming xml", strings.Join(args, " "), err)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the server had %d requests, want none", n)
	}
}

// TestIDPrefix: get, cancel, replay, send-now and get --explain take a unique prefix
// of 8 characters or more of an id; a shorter one, one that names several
// messages and one that names none are errors saying so.
func TestIDPrefix(t *testing.T) {
	one := `{"messages":[` + messageA + `],"next_cursor":""}`
	base, requests := cannedServer(t, map[string]string{
		"GET /v1/messages?id_prefix=01932c4e-8a&limit=4":           one,
		"GET /v1/messages?id_prefix=01932c4e&limit=4":              `{"messages":[` + messageB + `,` + messageA + `],"next_cursor":""}`,
		"GET /v1/messages?id_prefix=01932c4f-ff&limit=4":           `{"messages":[],"next_cursor":""}`,
		"GET /v1/messages/" + idA:                                  messageA,
		"GET /v1/messages/" + idA + "/explain":                     explainAnswer,
		"POST /v1/messages/" + idA + "/cancel":                     messageA,
		"POST /v1/messages/" + idA + "/replay":                     messageA,
		"POST /v1/messages/" + idA + "/send-now":                   messageA,
		"GET /v1/messages?id_prefix=01932c4e-8a10-7c2b-9f&limit=4": one,
	})
	for _, args := range [][]string{{"get", "01932c4e-8a"}, {"get", "01932c4e-8a", "--explain"}, {"cancel", "01932c4e-8a"}, {"send-now", "01932c4e-8a"},
		{"replay", "01932c4e-8a10-7c2b-9f"}} {
		out, err := cliOutput(t, base, append(args, "-o", "json")...)
		if err != nil || !strings.Contains(out, `"id": "`+idA+`"`) {
			t.Errorf("herald %s: %v\n%s\nwant message %s", strings.Join(args, " "), err, out, idA)
		}
	}
	for _, c := range []struct {
		prefix, want string
	}{
		{"01932c4", `id "01932c4" is too short: give the whole id or its first 8 characters at least`},
		{"01932c4e", "id prefix 01932c4e names several messages (" + idB + ", " + idA + "): give more of its characters"},
		{"01932c4f-ff", "no message's id starts with 01932c4f-ff"},
	} {
		before := requests.Load()
		if _, err := cliOutput(t, base, "get", c.prefix); err == nil || err.Error() != c.want {
			t.Errorf("herald get %s: %v, want %q", c.prefix, err, c.want)
		}
		if n := requests.Load() - before; n > 1 {
			t.Errorf("herald get %s: %d requests, want the list of the prefix only", c.prefix, n)
		}
	}
}
