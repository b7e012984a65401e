package sqlite

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/entryreason"
	"github.com/heraldmq/herald/internal/unixms"
)

// A message's timeline lives in its row, in the timeline column: the entries
// in order, each a line of five fields separated by '|',
//
//	attempt|at|from|to|reason
//
// where at is in unix milliseconds, from is empty for the creation entry
// and reason, with the carrier's answer on an entry that ends an attempt
// (package entryreason), is quoted as a Go string literal (strconv.Quote), so that it
// holds neither '\n' nor a field the parser could misread. Writes only ever
// append to it, in the statement that changes the status. The attempt comes
// first because the UPDATEs compute it: they append the new attempt number
// followed by the rest of the entry, which entryTail builds.

// entryTail returns a timeline entry without its leading attempt field:
// "|at|from|to|reason\n".
func entryTail(at time.Time, from, to herald.Status, reason string) string {
	var b strings.Builder
	b.Grow(len(from) + len(to) + len(reason) + 24)
	b.WriteByte('|')
	b.WriteString(strconv.FormatInt(unixms.From(at), 10))
	b.WriteByte('|')
	b.WriteString(string(from))
	b.WriteByte('|')
	b.WriteString(string(to))
	b.WriteByte('|')
	b.WriteString(strconv.Quote(reason))
	b.WriteByte('\n')
	return b.String()
}

// encodeEntry returns e as a timeline line.
func encodeEntry(e herald.TimelineEntry) string {
	return strconv.Itoa(e.Attempt) + entryTail(e.At, e.From, e.To, entryreason.Encode(e.Reason, e.Call))
}

// parseTimeline is the inverse of a sequence of encodeEntry.
func parseTimeline(s string) ([]herald.TimelineEntry, error) {
	entries := make([]herald.TimelineEntry, 0, strings.Count(s, "\n"))
	for line := range strings.Lines(s) {
		e, err := parseEntry(strings.TrimSuffix(line, "\n"))
		if err != nil {
			return nil, fmt.Errorf("timeline entry %d %q: %w", len(entries)+1, line, err)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// parseEntry reads one timeline line, without its '\n'.
func parseEntry(line string) (herald.TimelineEntry, error) {
	var e herald.TimelineEntry
	f := strings.SplitN(line, "|", 5) // the quoted reason, last, may hold '|'
	if len(f) != 5 {
		return e, fmt.Errorf("want 5 fields, got %d", len(f))
	}
	attempt, err := strconv.Atoi(f[0])
	if err != nil {
		return e, err
	}
	at, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return e, err
	}
	reason, err := strconv.Unquote(f[4])
	if err != nil {
		return e, fmt.Errorf("reason: %w", err)
	}
	e.Attempt, e.At, e.From, e.To = attempt, unixms.Time(at), herald.Status(f[2]), herald.Status(f[3])
	e.Reason, e.Call = entryreason.Decode(reason)
	return e, nil
}
