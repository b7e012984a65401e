package redis

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/entryreason"
	"github.com/heraldmq/herald/internal/unixms"
)

// A message is a hash of these fields (see lua/lib.lua):
//
//	s     status|attempt|lease|seq|updated|due|deadline|expires
//	k     created|priority|tenant|route|lane|target|dedup key (escaped; a
//	      message stored before lanes has no lane in k, and is never gated,
//	      and one stored before targets has neither target nor dedup key,
//	      and is never held back by order nor found by dedup), then, for a
//	      room's delivery, |p when it is pulled (Pull) or |d when pushed
//	t     the timeline after the creation entry: see decodeEntry
//	b     the fields no script reads: see appendBody
//	x, e  external id, last error
//	coal, corr, idem  the coalesce, correlation and idempotency keys
//	tp    the W3C traceparent of the request that sent it
//	res   the carrier's result (Message.Result), a JSON object
//
// Absent fields are empty.

// hashFields appends to args the values of fields s, k and b of m's hash,
// then the field/value pairs of its other fields that are set. It encodes
// the values into buf, which it returns too, and which args then point into.
func hashFields(args []any, buf []byte, m *herald.Message) ([]any, []byte) {
	buf = slices.Grow(buf[:0], 160+len(m.ID)+2*len(m.Target)+len(m.Lane)+len(m.DedupKey)+len(m.Text)+len(m.Payload))
	buf = append(buf, m.Status...)
	for _, n := range []int64{int64(m.Attempt), m.Lease, 0, unixms.From(m.UpdatedAt), unixms.From(m.DueAt), unixms.From(m.Deadline), unixms.From(m.ExpiresAt)} {
		buf = strconv.AppendInt(append(buf, '|'), n, 10)
	}
	s := len(buf)
	buf = strconv.AppendInt(buf, unixms.From(m.CreatedAt), 10)
	buf = strconv.AppendInt(append(buf, '|'), int64(m.Priority), 10)
	buf = append(append(append(append(buf, '|'), esc(m.Tenant)...), '|'), esc(m.Route)...)
	buf = append(append(buf, '|'), esc(m.Lane)...)
	buf = append(append(buf, '|'), esc(m.Target)...)
	buf = append(append(buf, '|'), esc(m.DedupKey)...)
	if kind := kind(m); kind != "" {
		buf = append(append(buf, '|'), kind...)
	}
	k := len(buf)
	buf = appendBody(buf, m)
	args = append(args, buf[:s], buf[s:k], buf[k:])
	for _, f := range []struct{ name, v string }{
		{"x", m.ExternalID}, {"e", m.LastError}, {"coal", m.CoalesceKey}, {"corr", m.CorrelationID}, {"idem", m.IdempotencyKey},
		{"tp", m.TraceParent}, {"res", encodeResult(m.Result)},
	} {
		if f.v != "" {
			args = append(args, f.name, f.v)
		}
	}
	return args, buf
}

// encodeResult returns field res of a message whose Result is r: a JSON
// object, "" for none.
func encodeResult(r map[string]string) string {
	if len(r) == 0 {
		return ""
	}
	b, _ := json.Marshal(r) // a map of strings always encodes
	return string(b)
}

// appendBody appends field b of m to dst: the id, target, lane, text,
// payload and params (their count, then key and value each), as a length
// and the bytes each, then max attempts and the attempt at creation, as
// varints, and last, when m has a Backoff, its delay in milliseconds (a
// varint) and its multiplier's bits (a uvarint).
func appendBody(dst []byte, m *herald.Message) []byte {
	str := func(s string) {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	str(m.ID)
	str(m.Target)
	str(m.Lane)
	str(m.Text)
	dst = binary.AppendUvarint(dst, uint64(len(m.Payload)))
	dst = append(dst, m.Payload...)
	dst = binary.AppendUvarint(dst, uint64(len(m.Params)))
	for k, v := range m.Params {
		str(k)
		str(v)
	}
	dst = binary.AppendVarint(dst, int64(m.MaxAttempts))
	dst = binary.AppendVarint(dst, int64(m.Attempt))
	if !m.Backoff.IsZero() {
		dst = binary.AppendVarint(dst, m.Backoff.Delay.Milliseconds())
		dst = binary.AppendUvarint(dst, math.Float64bits(m.Backoff.Multiplier))
	}
	return dst
}

// errBody is a body's error when field b ends too soon.
var errBody = errors.New("malformed field b")

// body reads field b, and sets err at the first read past its end.
type body struct {
	b   string
	err error
}

func (r *body) uvarint() uint64 {
	v, n := binary.Uvarint([]byte(r.b[:min(len(r.b), binary.MaxVarintLen64)]))
	if n <= 0 {
		r.err, r.b = errBody, ""
		return 0
	}
	r.b = r.b[n:]
	return v
}

// varint reads what binary.AppendVarint wrote: a zig-zag uvarint.
func (r *body) varint() int64 {
	u := r.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (r *body) string() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err, r.b = errBody, ""
		return ""
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

// decodedFields are the fields of a message's hash that decode reads: all
// but the timeline, t.
var decodedFields = []string{"s", "k", "b", "x", "e", "coal", "corr", "idem", "tp", "res"}

// decode returns the message of a hash's fields, and the attempt it was
// created with.
func decode(h map[string]string) (*herald.Message, int, error) {
	s := strings.Split(h["s"], "|")
	k := strings.Split(h["k"], "|")
	if len(s) != 8 || (len(k) != 4 && len(k) != 5 && len(k) != 7 && len(k) != 8) {
		return nil, 0, fmt.Errorf("malformed message: s=%q k=%q", h["s"], h["k"])
	}
	var nums [8]int64
	for i, v := range []string{s[1], s[2], s[4], s[5], s[6], s[7], k[0], k[1]} {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("malformed message: s=%q k=%q", h["s"], h["k"])
		}
		nums[i] = n
	}
	m := &herald.Message{
		Status: herald.Status(s[0]), Attempt: int(nums[0]), Lease: nums[1], UpdatedAt: unixms.Time(nums[2]),
		DueAt: unixms.Time(nums[3]), Deadline: unixms.Time(nums[4]), ExpiresAt: unixms.Time(nums[5]), CreatedAt: unixms.Time(nums[6]),
		Priority: int(nums[7]), Tenant: unesc(k[2]), Route: unesc(k[3]),
		ExternalID: h["x"], LastError: h["e"], CoalesceKey: h["coal"], CorrelationID: h["corr"], IdempotencyKey: h["idem"],
		TraceParent: h["tp"],
	}
	if len(k) >= 7 {
		m.DedupKey = unesc(k[6])
	}
	if res := h["res"]; res != "" {
		if err := json.Unmarshal([]byte(res), &m.Result); err != nil {
			return nil, 0, fmt.Errorf("malformed message: res=%q: %v", res, err)
		}
	}
	m.Pull = len(k) == 8 && k[7] == "p"
	r := &body{b: h["b"]}
	m.ID, m.Target, m.Lane, m.Text = r.string(), r.string(), r.string(), r.string()
	if p := r.string(); p != "" {
		m.Payload = []byte(p)
	}
	if n := r.uvarint(); n > 0 && r.err == nil {
		m.Params = make(map[string]string, min(n, 64))
		for range n {
			if r.err != nil {
				break
			}
			m.Params[r.string()] = r.string()
		}
	}
	m.MaxAttempts = int(r.varint())
	a0 := int(r.varint())
	if r.b != "" {
		delay := r.varint()
		m.Backoff = herald.Backoff{Delay: time.Duration(delay) * time.Millisecond, Multiplier: math.Float64frombits(r.uvarint())}
	}
	if r.err != nil {
		return nil, 0, fmt.Errorf("message %s: %w", m.ID, r.err)
	}
	return m, a0, nil
}

// replyMap returns the fields of an HGETALL reply from a script; a field
// given twice has its last value.
func replyMap(v any) map[string]string {
	flat, _ := v.([]any)
	h := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		h[str(flat[i])] = str(flat[i+1])
	}
	return h
}

// decodeReply returns the message of an HGETALL reply from a script.
func decodeReply(v any) (*herald.Message, error) {
	m, _, err := decode(replyMap(v))
	return m, err
}

// withTimeline returns the message of a hash's fields, with its timeline.
func withTimeline(h map[string]string) (*herald.Message, error) {
	m, a0, err := decode(h)
	if err != nil {
		return nil, err
	}
	m.Timeline = []herald.TimelineEntry{{At: m.CreatedAt, To: herald.StatusQueued, Attempt: a0, Reason: "created"}}
	for t := h["t"]; t != ""; {
		var e herald.TimelineEntry
		if e, t, err = decodeEntry(t); err != nil {
			return nil, fmt.Errorf("message %s: %w", m.ID, err)
		}
		m.Timeline = append(m.Timeline, e)
	}
	return m, nil
}

// decodeEntry parses the timeline entry at the start of t,
// at|from|to|attempt|n|reason with n the length of reason (which holds
// the carrier's answer on an entry that ends an attempt: see package
// entryreason), and returns the rest of t.
func decodeEntry(t string) (herald.TimelineEntry, string, error) {
	f := strings.SplitN(t, "|", 6)
	if len(f) != 6 {
		return herald.TimelineEntry{}, "", fmt.Errorf("malformed timeline %q", t)
	}
	at, err1 := strconv.ParseInt(f[0], 10, 64)
	attempt, err2 := strconv.Atoi(f[3])
	n, err3 := strconv.Atoi(f[4])
	if err1 != nil || err2 != nil || err3 != nil || n < 0 || n > len(f[5]) {
		return herald.TimelineEntry{}, "", fmt.Errorf("malformed timeline %q", t)
	}
	e := herald.TimelineEntry{At: unixms.Time(at), From: herald.Status(f[1]), To: herald.Status(f[2]), Attempt: attempt}
	e.Reason, e.Call = entryreason.Decode(f[5][:n])
	return e, f[5][n:], nil
}

// str returns a script's reply element as a string: Redis turns Lua
// numbers into integers.
func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

// count returns a script's reply of a number.
func count(op string, v any) (int, error) {
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("redis %s: unexpected reply %v", op, v)
	}
	return int(n), nil
}

var (
	escaper   = strings.NewReplacer("%", "%25", "|", "%7C")
	unescaper = strings.NewReplacer("%7C", "|", "%25", "%")
)

// esc escapes a tenant or route so that it holds no |: names joined by |
// split back unambiguously.
func esc(s string) string {
	if !strings.ContainsAny(s, "%|") {
		return s
	}
	return escaper.Replace(s)
}

// unesc is the inverse of esc.
func unesc(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	return unescaper.Replace(s)
}

// splitName splits a name of n escaped parts joined by | (tenant|route or
// tenant|route|status) into its parts, unescaped.
func splitName(name string, n int) ([]string, bool) {
	parts := strings.Split(name, "|")
	for i, p := range parts {
		parts[i] = unesc(p)
	}
	return parts, len(parts) == n
}
