package herald_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// progressBlipStore wraps a real store and fails the next failProgress
// progress writes of a resumable send (SENT_TO_NS -> SENT_TO_NS with an
// external id) as a store briefly unreachable does (a Redis failover, a
// busy SQLite writer). Every other write goes through.
type progressBlipStore struct {
	herald.Store
	failProgress atomic.Int32
}

func (s *progressBlipStore) Transition(ctx context.Context, t herald.Transition) error {
	if t.From == herald.StatusSentToNS && t.To == herald.StatusSentToNS && t.ExternalID != "" && s.failProgress.Add(-1) >= 0 {
		return herald.ErrStoreUnavailable
	}
	return s.Store.Transition(ctx, t)
}

// TestTelegramProgressStoreBlipShowsNoChunkTwice: chunk 1 of a 3-chunk text
// is accepted by Telegram, and the one write that records it (the progress)
// meets a momentary store error; the store answers again at once. The
// progress is written through the outage, as a send's result is, so the
// chat shows each chunk once: were the send to fail, its retry would start
// from chunk 1 again.
func TestTelegramProgressStoreBlipShowsNoChunkTwice(t *testing.T) {
	st := &progressBlipStore{}
	st.failProgress.Store(1)
	tr := newTelegramRigWith(t, tgToken, nil, func(cfg *herald.Config) { st.Store = cfg.Store; cfg.Store = st })
	text, chunks := longText(t)
	tr.start()
	m := tr.send(herald.SendRequest{Route: "chat", Target: tgAliceID, Text: text})
	tr.settle()
	tr.advance(5 * time.Second) // the channel profile's first retry, if there is one
	tr.advance(time.Second)
	got := tr.get(m.ID)
	if got.Status != herald.StatusDeliverySuccessful {
		t.Fatalf("ended %s (%q), want DELIVERY_SUCCESSFUL", got.Status, got.LastError)
	}
	if shown := tr.sim.Messages(tgAlice); len(shown) != len(chunks) {
		t.Errorf("the chat shows %d messages for a text of %d chunks (external id %q, attempt %d, last error %q); want each chunk once",
			len(shown), len(chunks), got.ExternalID, got.Attempt, got.LastError)
	}
	if got.ExternalID != "1,2,3" {
		t.Errorf("external id %q, want 1,2,3: the ids of the messages the chat shows for this text", got.ExternalID)
	}
}
