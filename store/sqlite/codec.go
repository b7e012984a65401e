package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// msgCols are the messages columns that make up a herald.Message, timeline
// aside, in the order scanMessage reads them.
const msgCols = `id, tenant, route, target, lane, priority, correlation_id, dedup_key,
	idempotency_key, coalesce_key, status, attempt, max_attempts, created_at,
	updated_at, due_at, deadline, expires_at, external_id, last_error, lease, trace_parent,
	result, gated, backoff, params, text, payload`

// The values of the gated column: how a QUEUED message is claimed.
const (
	gatedFree  = 0 // by Claim, from messages_ready
	gatedLanes = 1 // by Claim, through its lane (lanes.go)
	gatedPull  = 2 // by Pull only (rooms.go): the message has Pull set
	gatedKept  = 3 // by Claim, through its kept route's walk (kept.go)
)

// gatedCase is the gated column's value for a message of its route, when
// the JSON arrays gated and kept (SQL parameters) name the gated and the
// kept routes.
func gatedCase(gated, kept string) string {
	return `(CASE WHEN route IN (SELECT value FROM json_each(` + kept + `)) THEN 3
		WHEN route IN (SELECT value FROM json_each(` + gated + `)) THEN 1 ELSE 0 END)`
}

// Status expressions, written exactly as in the partial indexes of
// schema.sql so that queries holding them can use those indexes.
const (
	inFlightSQL = `(status = 'SENT_TO_NS' OR status = 'DELIVERED_TO_NS' OR status = 'SENT_TO_DEVICE')`
	waitingSQL  = `(status = 'QUEUED' OR status = 'TO_RETRY')`
	terminalSQL = `(status = 'DELIVERY_SUCCESSFUL' OR status = 'DELIVERY_FAILED' OR status = 'CANCELLED')`
	activeSQL   = `status != 'DELIVERY_SUCCESSFUL' AND status != 'DELIVERY_FAILED' AND status != 'CANCELLED'`
)

// encodeParams returns params as a JSON object, "" when there are none.
func encodeParams(params map[string]string) (string, error) {
	if len(params) == 0 {
		return "", nil
	}
	b, err := json.Marshal(params)
	return string(b), err
}

// encodeBackoff returns b as the backoff column holds it: the delay in
// milliseconds and the multiplier, separated by a space; "" when unset.
func encodeBackoff(b herald.Backoff) string {
	if b.IsZero() {
		return ""
	}
	return strconv.FormatInt(b.Delay.Milliseconds(), 10) + " " + strconv.FormatFloat(b.Multiplier, 'g', -1, 64)
}

// decodeBackoff is the inverse of encodeBackoff, for a set backoff.
func decodeBackoff(s string) (herald.Backoff, error) {
	ms, mult, ok := strings.Cut(s, " ")
	d, err1 := strconv.ParseInt(ms, 10, 64)
	m, err2 := strconv.ParseFloat(mult, 64)
	if !ok || err1 != nil || err2 != nil {
		return herald.Backoff{}, fmt.Errorf("malformed backoff %q", s)
	}
	return herald.Backoff{Delay: time.Duration(d) * time.Millisecond, Multiplier: m}, nil
}

// rowScanner is a *sql.Row or *sql.Rows.
type rowScanner interface {
	Scan(dest ...any) error
}

// scanMessage reads the msgCols columns, then the extra ones into extra.
func scanMessage(sc rowScanner, extra ...any) (*herald.Message, error) {
	var (
		m                                        herald.Message
		status, params, backoff, result          string
		created, updated, due, deadline, expires int64
		gated                                    int
		payload                                  []byte
	)
	dest := append([]any{
		&m.ID, &m.Tenant, &m.Route, &m.Target, &m.Lane, &m.Priority, &m.CorrelationID, &m.DedupKey,
		&m.IdempotencyKey, &m.CoalesceKey, &status, &m.Attempt, &m.MaxAttempts, &created,
		&updated, &due, &deadline, &expires, &m.ExternalID, &m.LastError, &m.Lease, &m.TraceParent,
		&result, &gated, &backoff, &params, &m.Text, &payload,
	}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return nil, err
	}
	m.Status, m.Pull = herald.Status(status), gated == gatedPull
	if backoff != "" {
		var err error
		if m.Backoff, err = decodeBackoff(backoff); err != nil {
			return nil, fmt.Errorf("message %s: %w", m.ID, err)
		}
	}
	m.CreatedAt, m.UpdatedAt, m.DueAt = unixms.Time(created), unixms.Time(updated), unixms.Time(due)
	m.Deadline, m.ExpiresAt = unixms.Time(deadline), unixms.Time(expires)
	m.Payload = payload
	if params != "" {
		if err := json.Unmarshal([]byte(params), &m.Params); err != nil {
			return nil, fmt.Errorf("message %s: params: %w", m.ID, err)
		}
	}
	if result != "" {
		if err := json.Unmarshal([]byte(result), &m.Result); err != nil {
			return nil, fmt.Errorf("message %s: result: %w", m.ID, err)
		}
	}
	return &m, nil
}

// scanWithTimeline reads the msgCols columns, then the timeline.
func scanWithTimeline(sc rowScanner) (*herald.Message, error) {
	var timeline string
	m, err := scanMessage(sc, &timeline)
	if err != nil {
		return nil, err
	}
	if m.Timeline, err = parseTimeline(timeline); err != nil {
		return nil, fmt.Errorf("message %s: %w", m.ID, err)
	}
	return m, nil
}

// scanMessages reads the messages of a msgCols query.
func scanMessages(rows *sql.Rows, err error) ([]*herald.Message, error) {
	return collect(rows, err, func(sc rowScanner) (*herald.Message, error) { return scanMessage(sc) })
}

// collect returns what scan reads from each of rows, or the first error,
// err included (so that it can take a Query's results as they come). It
// closes rows. Writes read every row before they change anything.
func collect[T any](rows *sql.Rows, err error, scan func(rowScanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
