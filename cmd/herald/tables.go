package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The tables of herald's answers: messages, dead letters, stats, health
// and pulled deliveries. Any other answer is rendered by its shape
// (renderAny).

// isMessage reports whether o is a message's view.
func isMessage(o object) bool {
	return o.has("id", "route", "status", "attempt")
}

// messageTitles are the columns of a list of messages.
var messageTitles = []string{"ID", "STATUS", "ROUTE", "TARGET", "ATTEMPT", "UPDATED"}

// messageCells are a message's cells under messageTitles.
func messageCells(m object) []string {
	return []string{text(m.get("id")), text(m.get("status")), clip(text(m.get("route")), 12),
		clip(text(m.get("target")), 16), attempts(m), text(m.get("updated_at"))}
}

// attempts is "2/5": the sends started of the most allowed.
func attempts(m object) string {
	return text(m.get("attempt")) + "/" + text(m.get("max_attempts"))
}

// renderMessageRow writes a message as a table of one row: the answer of
// send, cancel, replay.
func renderMessageRow(w io.Writer, m object) {
	row(w, messageTitles...)
	row(w, messageCells(m)...)
}

// renderRows writes the list under key of the answer as a table of
// titles, each item's cells, then how to ask for the next page; none
// when the list is empty.
func renderRows(w io.Writer, answer any, key, none string, titles []string, cells func(object) []string) {
	page, _ := answer.(object)
	items, _ := page.get(key).([]any)
	if len(items) == 0 {
		fmt.Fprintln(w, none)
		return
	}
	row(w, titles...)
	for _, it := range items {
		o, _ := it.(object)
		row(w, cells(o)...)
	}
	nextCursor(w, page)
}

// renderMessages writes a page of messages.
func renderMessages(w io.Writer, answer any) {
	renderRows(w, answer, "messages", "no messages", messageTitles, messageCells)
}

// renderDeadLetters writes a page of dead letters with their last error.
func renderDeadLetters(w io.Writer, answer any) {
	renderRows(w, answer, "messages", "no dead letters", []string{"ID", "ROUTE", "TARGET", "UPDATED", "LAST ERROR"},
		func(o object) []string {
			return []string{text(o.get("id")), clip(text(o.get("route")), 12), clip(text(o.get("target")), 16),
				text(o.get("updated_at")), clip(text(o.get("last_error")), 28)}
		})
}

// renderMessage writes a message's fields, one a line, then its timeline
// as a table.
func renderMessage(w io.Writer, answer any) {
	m, ok := answer.(object)
	if !ok || !isMessage(m) {
		renderAny(w, answer)
		return
	}
	for _, f := range m {
		switch f.key {
		case "timeline", "max_attempts":
		case "attempt":
			row(w, "attempt", attempts(m))
		case "payload", "text":
			row(w, f.key, clip(text(f.value), 60))
		default:
			row(w, strings.ReplaceAll(f.key, "_", " "), valueText(f.key, f.value))
		}
	}
	timeline, _ := m.get("timeline").([]any)
	if len(timeline) == 0 {
		return
	}
	fmt.Fprintln(w)
	renderTimeline(w, timeline)
}

// renderTimeline writes a message's timeline, oldest first: when, the
// move, the attempt, why; and what the carrier answered, how long it took
// and its error, when an entry says.
func renderTimeline(w io.Writer, entries []any) {
	answered := false
	for _, e := range entries {
		o, _ := e.(object)
		for _, k := range []string{"answer", "error", "duration_ms"} {
			answered = answered || text(o.get(k)) != "-"
		}
	}
	titles := []string{"AT", "FROM → TO", "ATTEMPT", "REASON"}
	if answered {
		titles = append(titles, "ANSWER", "DURATION", "ERROR")
	}
	row(w, titles...)
	for _, e := range entries {
		o, _ := e.(object)
		cells := []string{text(o.get("at")), text(o.get("from")) + " → " + text(o.get("to")), text(o.get("attempt")),
			clip(text(o.get("reason")), 30)}
		if answered {
			cells = append(cells, clip(text(o.get("answer")), 12), millis(number(o.get("duration_ms"))), clip(text(o.get("error")), 30))
		}
		row(w, cells...)
	}
}

// inFlight are the statuses of a message between its send and its outcome.
var inFlight = []string{"SENT_TO_NS", "DELIVERED_TO_NS", "SENT_TO_DEVICE"}

// renderStats writes the figures of GET /v1/stats, then the counts by
// route and status.
func renderStats(w io.Writer, answer any) {
	s, ok := answer.(object)
	if !ok {
		renderAny(w, answer)
		return
	}
	statsLines(w, s)
	fmt.Fprintln(w)
	statusTable(w, s)
}

// statsLines writes the scalar figures of stats, one a line.
func statsLines(w io.Writer, s object) {
	for _, f := range s {
		switch f.key {
		case "by_status", "by_route", "status", "message", "warnings":
		case "oldest_queued_seconds":
			row(w, "oldest queued", millis(number(f.value)*1000))
		case "success_rate":
			row(w, "success rate", strconv.FormatFloat(number(f.value)*100, 'f', 1, 64)+"%")
		case "latency_p50_ms", "latency_p99_ms":
			row(w, "latency "+strings.TrimSuffix(strings.TrimPrefix(f.key, "latency_"), "_ms"), millis(number(f.value)))
		default:
			row(w, strings.ReplaceAll(f.key, "_", " "), valueText(f.key, f.value))
		}
	}
}

// statusTable writes the messages of each route by status (in flight:
// sent and not yet answered), and their sums.
func statusTable(w io.Writer, s object) {
	row(w, append([]string{"ROUTE"}, statusTitles...)...)
	routes, _ := s.get("by_route").(object)
	for _, r := range routes {
		by, _ := r.value.(object)
		row(w, append([]string{clip(r.key, 24)}, statusCells(by)...)...)
	}
	by, _ := s.get("by_status").(object)
	row(w, append([]string{"(all)"}, statusCells(by)...)...)
}

// statusTitles are the columns of statusCells.
var statusTitles = []string{"QUEUED", "IN FLIGHT", "TO_RETRY", "SUCCESSFUL", "FAILED", "CANCELLED"}

// statusCells are counts by status (status → count) under statusTitles.
func statusCells(by object) []string {
	sum := func(statuses ...string) string {
		n := 0.0
		for _, st := range statuses {
			n += number(by.get(st))
		}
		return strconv.FormatFloat(n, 'f', -1, 64)
	}
	return []string{sum("QUEUED"), sum(inFlight...), sum("TO_RETRY"), sum("DELIVERY_SUCCESSFUL"), sum("DELIVERY_FAILED"), sum("CANCELLED")}
}

// renderRoutes writes the configured routes with their messages by status
// and the operator's pause of each, then the orphaned routes (missing from
// the configuration, their messages held).
func renderRoutes(w io.Writer, answer any) {
	v, _ := answer.(object)
	if v.has("routes") {
		renderRows(w, v, "routes", "no routes", append(append([]string{"ROUTE"}, statusTitles...), "PAUSED"),
			func(o object) []string {
				counts, _ := o.get("counts").(object)
				paused := "-"
				if p, ok := o.get("paused").(object); ok {
					paused = "until " + text(p.get("until"))
					if text(p.get("until")) == "-" {
						paused = "until resumed"
					}
				}
				return append(append([]string{clip(text(o.get("route")), 24)}, statusCells(counts)...), paused)
			})
		fmt.Fprintln(w)
	}
	renderRows(w, v, "orphaned", "no orphaned routes", []string{"ORPHANED ROUTE", "MESSAGES HELD"}, func(o object) []string {
		return []string{text(o.get("route")), text(o.get("messages"))}
	})
}

// renderLanes writes the busiest lanes, then the operator's pauses.
func renderLanes(w io.Writer, answer any) {
	v, _ := answer.(object)
	lanes, _ := v.get("lanes").([]any)
	if len(lanes) == 0 {
		fmt.Fprintln(w, "no lane holds messages")
	} else {
		renderList(w, lanes)
	}
	if pauses, _ := v.get("pauses").([]any); len(pauses) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "paused by an operator:")
		renderList(w, pauses)
	}
}

// renderHealth writes the health's status, what is wrong, then the stats
// it was judged on.
func renderHealth(w io.Writer, answer any) {
	h, ok := answer.(object)
	if !ok {
		renderAny(w, answer)
		return
	}
	row(w, "status", text(h.get("status")))
	row(w, "message", text(h.get("message")))
	row(w, "warnings", text(h.get("warnings")))
	statsLines(w, h)
	fmt.Fprintln(w)
	statusTable(w, h)
}

// renderPulled writes the deliveries a pull leased: the lease id that
// ack and nack take, first.
func renderPulled(w io.Writer, answer any) {
	renderRows(w, answer, "deliveries", "no deliveries waiting", []string{"LEASE ID", "ID", "TYPE", "ATTEMPT", "DATA"},
		func(o object) []string {
			typ := text(o.get("type"))
			if v := str(o.get("version")); v != "" {
				typ += ":" + v
			}
			data := "-"
			if raw := o.get("data"); raw != nil {
				data = clip(compact(raw), 16)
			}
			return []string{text(o.get("lease_id")), text(o.get("id")), clip(typ, 16), text(o.get("attempt")), data}
		})
}

// compact returns v as JSON on one line.
func compact(v any) string {
	switch v := v.(type) {
	case object:
		parts := make([]string, len(v))
		for i, f := range v {
			parts[i] = strconv.Quote(f.key) + ":" + compact(f.value)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = compact(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case string:
		return strconv.Quote(v)
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}
