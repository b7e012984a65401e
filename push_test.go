package herald_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald"
)

// network is a push carrier whose events the tests write as JSON: it
// accepts every message with the queue item id "q-<message id>", and can
// hold a send until released, and say whether its queue still has an item.
type network struct {
	mu      sync.Mutex
	hold    chan struct{} // when not nil, Send waits for it to close
	queued  bool          // StillQueued's answer
	sends   int
	checked int
}

func (n *network) Path() herald.Path              { return herald.PathPush }
func (n *network) Validate(*herald.Message) error { return nil }
func (n *network) Send(ctx context.Context, m *herald.Message) (herald.SendResult, error) {
	n.mu.Lock()
	n.sends++
	hold := n.hold
	n.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return herald.SendResult{}, ctx.Err()
		}
	}
	return herald.SendResult{ExternalID: "q-" + m.ID}, nil
}

func (n *network) StillQueued(context.Context, *herald.Message) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.checked++
	return n.queued, nil
}

// networkEvent is the test network's event body.
type networkEvent struct {
	Item         string `json:"item"`
	Dedup        string `json:"dedup"`
	Acknowledged bool   `json:"acknowledged"`
	Code         string `json:"code"`
	Data         string `json:"data"`
}

func (n *network) ReadEvent(eventType, _ string, body []byte) (herald.Inbound, bool, error) {
	var ev networkEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return herald.Inbound{}, false, &herald.InvalidError{Field: "body", Message: err.Error()}
	}
	in := herald.Inbound{ExternalID: ev.Item, Correlation: ev.Dedup, Device: "0102030405060708"}
	switch eventType {
	case "txack":
		in.Kind = herald.InboundTransmitted
	case "ack":
		in.Kind, in.Acknowledged = herald.InboundAck, ev.Acknowledged
	case "up":
		in.Kind, in.Uplink = herald.InboundUplink, []byte(fmt.Sprintf(`{"data":%q}`, ev.Data))
	case "log":
		in.Kind, in.Reason, in.Permanent = herald.InboundFailed, ev.Code, ev.Code == "DOWNLINK_PAYLOAD_SIZE"
	case "join":
		return herald.Inbound{}, false, nil
	default:
		return herald.Inbound{}, false, &herald.InvalidError{Field: "event", Message: "unknown event type " + eventType}
	}
	return in, true, nil
}

func (n *network) AwaitsAck(m *herald.Message) bool { return m.Params["confirmed"] != "false" }
func (n *network) IngressSecret() string            { return "s3cret" }

// pushRig is a rig with one lorawan route "lora" on a test network and a
// recording subscriber.
type pushRig struct {
	*rig
	net  *network
	sink *recordingSink
}

func newPushRig(t *testing.T) *pushRig {
	t.Helper()
	n := &network{}
	p, err := herald.ProfilePolicy(herald.ProfileLoRaWAN)
	if err != nil {
		t.Fatal(err)
	}
	p.Admission = herald.Admission{} // no spacing: the tests send one message at a time
	sink := &recordingSink{}
	r := newRig(t, []herald.Route{{Name: "lora", Carrier: n, Policy: p}}, herald.Subscriber{Name: "app", Sink: sink})
	r.start()
	return &pushRig{rig: r, net: n, sink: sink}
}

// ingest hands the engine one event of the test network and waits until
// the engine has done what it would with it.
func (r *pushRig) ingest(eventType string, ev networkEvent) {
	r.t.Helper()
	body, _ := json.Marshal(ev)
	if err := r.eng.Ingest(context.Background(), "lora", eventType, "application/json", body); err != nil {
		r.t.Fatalf("ingest %s: %v", eventType, err)
	}
	r.settle()
}

// delivered sends a confirmed message and waits until the network has it
// (DELIVERED_TO_NS); it returns the message and its queue item id.
func (r *pushRig) delivered(params map[string]string) (*herald.Message, string) {
	r.t.Helper()
	m := r.send(herald.SendRequest{Route: "lora", Target: "0102030405060708", Payload: []byte{1}, Params: params})
	r.settle()
	if got := r.get(m.ID); got.Status != herald.StatusDeliveredToNS {
		r.t.Fatalf("after the send: %s, want DELIVERED_TO_NS", got.Status)
	}
	return m, "q-" + m.ID
}

func (r *pushRig) status(id string) herald.Status {
	r.t.Helper()
	return r.get(id).Status
}

func TestPushGoesThroughEveryStageWhenTheAckPairsWithItsUplink(t *testing.T) {
	for _, order := range []string{"ack first", "uplink first"} {
		t.Run(order, func(t *testing.T) {
			r := newPushRig(t)
			m, item := r.delivered(nil)
			r.ingest("txack", networkEvent{Item: item})
			got := r.get(m.ID)
			if got.Status != herald.StatusSentToDevice || got.Deadline.Sub(r.clock.Now()) != 12*time.Second {
				t.Fatalf("after the txack: %s, deadline in %v; want SENT_TO_DEVICE, 12s", got.Status, got.Deadline.Sub(r.clock.Now()))
			}
			ack, up := func() { r.ingest("ack", networkEvent{Item: item, Dedup: "d1", Acknowledged: true}) },
				func() { r.ingest("up", networkEvent{Dedup: "d1", Data: "AQ=="}) }
			first, second := ack, up
			if order == "uplink first" {
				first, second = up, ack
			}
			first()
			r.advance(3 * time.Second)
			if s := r.status(m.ID); s != herald.StatusSentToDevice {
				t.Fatalf("with one of the pair: %s, want SENT_TO_DEVICE", s)
			}
			second()
			checkTimeline(t, r.get(m.ID), []step{
				{"", herald.StatusQueued, 0},
				{herald.StatusQueued, herald.StatusSentToNS, 1},
				{herald.StatusSentToNS, herald.StatusDeliveredToNS, 1},
				{herald.StatusDeliveredToNS, herald.StatusSentToDevice, 1},
				{herald.StatusSentToDevice, herald.StatusDeliverySuccessful, 1},
			})
			// Repeats change nothing, and the paired uplink is no uplink event.
			r.ingest("txack", networkEvent{Item: item})
			r.ingest("ack", networkEvent{Item: item, Dedup: "d1", Acknowledged: true})
			r.advance(11 * time.Second)
			if got := r.get(m.ID); len(got.Timeline) != 5 || got.Status != herald.StatusDeliverySuccessful {
				t.Fatalf("after repeats: %s with %d entries, want DELIVERY_SUCCESSFUL with 5", got.Status, len(got.Timeline))
			}
			for _, ev := range r.sink.delivered() {
				if ev.Type == herald.EventUplink {
					t.Errorf("the paired uplink went to the subscriber: %s", ev.Uplink)
				}
			}
		})
	}
}

func TestPushAckBeforeItsTxackRecordsEveryStage(t *testing.T) {
	r := newPushRig(t)
	m, item := r.delivered(nil)
	r.ingest("up", networkEvent{Dedup: "d1"})
	r.ingest("ack", networkEvent{Item: item, Dedup: "d1", Acknowledged: true})
	r.ingest("txack", networkEvent{Item: item}) // late: changes nothing
	r.advance(time.Minute)
	checkTimeline(t, r.get(m.ID), []step{
		{"", herald.StatusQueued, 0},
		{herald.StatusQueued, herald.StatusSentToNS, 1},
		{herald.StatusSentToNS, herald.StatusDeliveredToNS, 1},
		{herald.StatusDeliveredToNS, herald.StatusSentToDevice, 1},
		{herald.StatusSentToDevice, herald.StatusDeliverySuccessful, 1},
	})
}

// TestPushEventsAppliedTogetherEachCount hands the engine a message's
// txack, uplink and ack at once, so that the inbox applies them in
// parallel and they race on the message: each message still ends
// DELIVERY_SUCCESSFUL through every stage, at its first attempt.
func TestPushEventsAppliedTogetherEachCount(t *testing.T) {
	r := newPushRig(t)
	var ms []*herald.Message
	var items []string
	for range 20 {
		m, item := r.delivered(nil)
		ms, items = append(ms, m), append(items, item)
	}
	for i, item := range items {
		dedup := fmt.Sprint("d", i)
		for _, ev := range []struct {
			typ string
			ev  networkEvent
		}{{"txack", networkEvent{Item: item}}, {"up", networkEvent{Dedup: dedup}}, {"ack", networkEvent{Item: item, Dedup: dedup, Acknowledged: true}}} {
			body, _ := json.Marshal(ev.ev)
			if err := r.eng.Ingest(context.Background(), "lora", ev.typ, "", body); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.advance(time.Second)
	for _, m := range ms {
		checkTimeline(t, r.get(m.ID), []step{
			{"", herald.StatusQueued, 0},
			{herald.StatusQueued, herald.StatusSentToNS, 1},
			{herald.StatusSentToNS, herald.StatusDeliveredToNS, 1},
			{herald.StatusDeliveredToNS, herald.StatusSentToDevice, 1},
			{herald.StatusSentToDevice, herald.StatusDeliverySuccessful, 1},
		})
	}
}

func TestPushUnconfirmedSucceedsAtTheTxack(t *testing.T) {
	r := newPushRig(t)
	m, item := r.delivered(map[string]string{"confirmed": "false"})
	r.ingest("txack", networkEvent{Item: item})
	if s := r.status(m.ID); s != herald.StatusDeliverySuccessful {
		t.Fatalf("after the txack: %s, want DELIVERY_SUCCESSFUL", s)
	}
}

func TestPushLoneAckOrUplinkOlderThanTheWindowDoesNotSucceed(t *testing.T) {
	for _, lone := range []string{"ack", "up"} {
		t.Run(lone, func(t *testing.T) {
			r := newPushRig(t)
			m, item := r.delivered(nil)
			r.ingest("txack", networkEvent{Item: item})
			ack, up := networkEvent{Item: item, Dedup: "d1", Acknowledged: true}, networkEvent{Dedup: "d1"}
			if lone == "ack" {
				r.ingest("ack", ack)
				r.advance(herald.AckWindow + time.Millisecond)
				r.ingest("up", up)
			} else {
				r.ingest("up", up)
				r.advance(herald.AckWindow + time.Millisecond)
				r.ingest("ack", ack)
			}
			if s := r.status(m.ID); s != herald.StatusSentToDevice {
				t.Fatalf("with the pair %v apart: %s, want SENT_TO_DEVICE", herald.AckWindow+time.Millisecond, s)
			}
			r.advance(12*time.Second - herald.AckWindow)
			if s := r.status(m.ID); s != herald.StatusToRetry {
				t.Fatalf("after the device timeout: %s, want TO_RETRY", s)
			}
		})
	}
}

func TestPushDeviceTimeoutRetries(t *testing.T) {
	r := newPushRig(t)
	m, item := r.delivered(nil)
	r.ingest("txack", networkEvent{Item: item})
	r.advance(12*time.Second - time.Millisecond)
	if s := r.status(m.ID); s != herald.StatusSentToDevice {
		t.Fatalf("just before the device timeout: %s", s)
	}
	r.advance(time.Millisecond)
	if got := r.get(m.ID); got.Status != herald.StatusToRetry || got.Timeline[len(got.Timeline)-1].Reason != "device timeout" ||
		!strings.HasPrefix(got.LastError, "Timed out waiting for device response after transmission (") {
		t.Fatalf("at the device timeout: %s %q (%q), want TO_RETRY \"device timeout\" with the original lifecycle's words", got.Status,
			got.Timeline[len(got.Timeline)-1].Reason, got.LastError)
	}
}

func TestPushNackAndNetworkDropsRetryOrFail(t *testing.T) {
	for _, tc := range []struct {
		name, event string
		ev          networkEvent
		want        herald.Status
	}{
		{"nack", "ack", networkEvent{Acknowledged: false, Dedup: "d1"}, herald.StatusToRetry},
		{"gateway", "log", networkEvent{Code: "DOWNLINK_GATEWAY"}, herald.StatusToRetry},
		{"expired", "log", networkEvent{Code: "EXPIRED"}, herald.StatusToRetry},
		{"payload size", "log", networkEvent{Code: "DOWNLINK_PAYLOAD_SIZE"}, herald.StatusDeliveryFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newPushRig(t)
			m, item := r.delivered(nil)
			tc.ev.Item = item
			r.ingest(tc.event, tc.ev)
			if s := r.status(m.ID); s != tc.want {
				t.Fatalf("after %s: %s, want %s", tc.name, s, tc.want)
			}
		})
	}
}

func TestPushEventBeforeItsStepIsDurableWaitsInTheInbox(t *testing.T) {
	r := newPushRig(t)
	hold := make(chan struct{})
	r.net.mu.Lock()
	r.net.hold = hold
	r.net.mu.Unlock()
	m := r.send(herald.SendRequest{Route: "lora", Target: "0102030405060708", Payload: []byte{1}})
	eventually(t, func() bool { r.net.mu.Lock(); defer r.net.mu.Unlock(); return r.net.sends == 1 }, patience)
	body, _ := json.Marshal(networkEvent{Item: "q-" + m.ID, Dedup: "tx"})
	if err := r.eng.Ingest(context.Background(), "lora", "txack", "", body); err != nil {
		t.Fatal(err)
	}
	// The engine looked at the txack, found no message with its queue
	// item id, and keeps it for a moment later (not the claim's lease).
	eventually(t, func() bool {
		evs, err := r.store.InboundByCorrelation(context.Background(), "lora", "tx")
		return err == nil && len(evs) == 1 && evs[0].DueAt.After(r.clock.Now()) && evs[0].DueAt.Before(r.clock.Now().Add(time.Second))
	}, patience)
	close(hold)
	eventually(t, func() bool { return r.status(m.ID) == herald.StatusDeliveredToNS }, patience)
	r.advance(time.Second)
	if s := r.status(m.ID); s != herald.StatusSentToDevice {
		t.Fatalf("txack received before DELIVERED_TO_NS: %s a second later, want SENT_TO_DEVICE", s)
	}
}

// TestPushEventWaitingForItsStepIsLookedAtAgainSoon: an event that came
// back before its send's answer was recorded (a fast network's proof) is
// looked at again after its age, from a few milliseconds, not after half
// a second; the inbox wakes for it before its next poll.
func TestPushEventWaitingForItsStepIsLookedAtAgainSoon(t *testing.T) {
	n := &network{hold: make(chan struct{})}
	p, err := herald.ProfilePolicy(herald.ProfileLoRaWAN)
	if err != nil {
		t.Fatal(err)
	}
	p.Admission = herald.Admission{}
	r := newRigWith(t, func(cfg *herald.Config) { cfg.PollInterval = 250 * time.Millisecond },
		[]herald.Route{{Name: "lora", Carrier: n, Policy: p}})
	r.start()
	m := r.send(herald.SendRequest{Route: "lora", Target: "0102030405060708", Payload: []byte{1}, Params: map[string]string{"confirmed": "false"}})
	eventually(t, func() bool { n.mu.Lock(); defer n.mu.Unlock(); return n.sends == 1 }, patience)
	body, _ := json.Marshal(networkEvent{Item: "q-" + m.ID, Dedup: "tx"})
	if err := r.eng.Ingest(context.Background(), "lora", "txack", "", body); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		evs, err := r.store.InboundByCorrelation(context.Background(), "lora", "tx")
		return err == nil && len(evs) == 1 && evs[0].DueAt.Equal(r.clock.Now().Add(5*time.Millisecond))
	}, patience)
	close(n.hold)
	eventually(t, func() bool { return r.get(m.ID).Status == herald.StatusDeliveredToNS }, patience)
	r.advance(5 * time.Millisecond)
	if s := r.get(m.ID).Status; s != herald.StatusDeliverySuccessful {
		t.Fatalf("5 ms after the txack came early: %s, want DELIVERY_SUCCESSFUL", s)
	}
}

func TestPushUplinkThatAnswersNoMessageGoesToSubscribers(t *testing.T) {
	r := newPushRig(t)
	r.ingest("up", networkEvent{Dedup: "d9", Data: "BQY="})
	r.advance(herald.AckWindow)
	evs := r.sink.delivered()
	if len(evs) != 1 || evs[0].Type != herald.EventUplink || string(evs[0].Uplink) != `{"data":"BQY="}` || evs[0].Message != nil {
		t.Fatalf("subscriber got %+v, want one uplink event with the data", evs)
	}
}

func TestPushCarrierTimeoutExtendsWhileQueuedThenRetries(t *testing.T) {
	r := newPushRig(t)
	r.net.queued = true
	m, _ := r.delivered(nil)
	r.advance(15 * time.Minute)
	got := r.get(m.ID)
	if got.Status != herald.StatusDeliveredToNS || got.Deadline.Sub(r.clock.Now()) != 15*time.Minute {
		t.Fatalf("at the carrier timeout with the item queued: %s, deadline in %v; want DELIVERED_TO_NS, 15m more", got.Status, got.Deadline.Sub(r.clock.Now()))
	}
	r.net.mu.Lock()
	r.net.queued = false
	r.net.mu.Unlock()
	r.advance(15 * time.Minute)
	// The original lifecycle's words, which alerting rules match.
	if got := r.get(m.ID); got.Status != herald.StatusToRetry ||
		!strings.HasPrefix(got.LastError, "Timed out waiting for relay node to transmit message to device (") {
		t.Fatalf("at the carrier timeout with the item gone: %s %q, want TO_RETRY with the relay node's timeout", got.Status, got.LastError)
	}
}

func TestIngestTwiceStoresTheEventOnce(t *testing.T) {
	r := newPushRig(t)
	m, item := r.delivered(map[string]string{"confirmed": "false"})
	body, _ := json.Marshal(networkEvent{Item: item, Dedup: "tx"})
	for range 2 { // as two nodes subscribed to one broker would
		if err := r.eng.Ingest(context.Background(), "lora", "txack", "", body); err != nil {
			t.Fatal(err)
		}
	}
	if evs, err := r.store.InboundByCorrelation(context.Background(), "lora", "tx"); err != nil || len(evs) > 1 {
		t.Fatalf("inbox holds %d copies (%v), want at most 1", len(evs), err)
	}
	r.settle()
	if s := r.status(m.ID); s != herald.StatusDeliverySuccessful {
		t.Fatalf("after the txack: %s", s)
	}
}

func TestIngestRefusesWhatItCannotRead(t *testing.T) {
	r := newPushRig(t)
	ctx := context.Background()
	var invalid *herald.InvalidError
	if err := r.eng.Ingest(ctx, "lora", "up", "", []byte("{garbage")); !errors.As(err, &invalid) {
		t.Errorf("garbage body: %v, want an InvalidError", err)
	}
	if err := r.eng.Ingest(ctx, "lora", "bogus", "", []byte("{}")); !errors.As(err, &invalid) {
		t.Errorf("unknown event: %v, want an InvalidError", err)
	}
	if err := r.eng.Ingest(ctx, "nowhere", "up", "", []byte("{}")); !errors.Is(err, herald.ErrNoIngress) {
		t.Errorf("unknown route: %v, want ErrNoIngress", err)
	}
	if err := r.eng.Ingest(ctx, "lora", "join", "", []byte("{}")); err != nil {
		t.Errorf("join: %v, want nil (ignored)", err)
	}
	evs, err := r.store.ClaimInbound(ctx, r.clock.Now(), 10, r.clock.Now())
	if err != nil || len(evs) != 0 {
		t.Fatalf("inbox after refused events: %v %v, want empty", evs, err)
	}
}

// TestPushLateAckAfterTheDeviceTimeoutIsAdopted: the device's ack and its
// uplink arrive 2 s after the device timeout moved a confirmed downlink to
// TO_RETRY, before its retry is sent: the message ends
// DELIVERY_SUCCESSFUL ("late answer of attempt 1 adopted"), the network
// got it once, and the subscriber hears of the success. A late failure
// (a nack, a network drop) of a message waiting for its retry changes
// nothing, and nor does a late txack of a confirmed downlink.
func TestPushLateAckAfterTheDeviceTimeoutIsAdopted(t *testing.T) {
	r := newPushRig(t)
	m, item := r.delivered(nil)
	r.ingest("txack", networkEvent{Item: item})
	r.advance(12 * time.Second)
	if got := r.get(m.ID); got.Status != herald.StatusToRetry || !got.DueAt.After(r.clock.Now().Add(time.Second)) {
		t.Fatalf("at the device timeout: %s, due at %v; want TO_RETRY, its retry not due for a while", got.Status, got.DueAt)
	}
	r.ingest("ack", networkEvent{Item: item, Acknowledged: false, Dedup: "late-nack"})
	r.ingest("log", networkEvent{Item: item, Code: "DOWNLINK_GATEWAY"})
	r.ingest("txack", networkEvent{Item: item})
	if got := r.get(m.ID); got.Status != herald.StatusToRetry || len(got.Timeline) != 5 {
		t.Fatalf("after a late nack, drop and txack: %s with %d timeline entries, want TO_RETRY with 5: nothing changed", got.Status, len(got.Timeline))
	}
	r.advance(time.Second)
	r.ingest("ack", networkEvent{Item: item, Acknowledged: true, Dedup: "d1"})
	r.ingest("up", networkEvent{Item: item, Dedup: "d1", Data: "AQ=="})
	got := r.get(m.ID)
	last := got.Timeline[len(got.Timeline)-1]
	if got.Status != herald.StatusDeliverySuccessful || last.From != herald.StatusToRetry || last.Reason != "late answer of attempt 1 adopted: acknowledged by the device" {
		t.Fatalf("after the late ack: %s, last entry %s -> %s %q; want DELIVERY_SUCCESSFUL from TO_RETRY, the late answer adopted", got.Status, last.From, last.To, last.Reason)
	}
	r.advance(time.Minute) // past the retry's time: nothing is sent again
	if r.net.sends != 1 {
		t.Errorf("the network got %d sends, want 1", r.net.sends)
	}
	if evs := r.sink.delivered(); len(evs) != 1 || evs[0].Type != herald.StatusDeliverySuccessful {
		t.Errorf("events %+v, want one DELIVERY_SUCCESSFUL", evs)
	}
}

// timedNetwork is a network whose sends bound their own wait for the
// network's answer (SendResult.StageTimeout), as an LXMF proof's does.
type timedNetwork struct{ network }

func (n *timedNetwork) Send(ctx context.Context, m *herald.Message) (herald.SendResult, error) {
	res, err := n.network.Send(ctx, m)
	res.StageTimeout, res.Result = 12*time.Second, map[string]string{"method": "direct"}
	return res, err
}

// TestPushStageTimeoutOfTheSendBoundsItsWait: a push carrier's own bound
// on a send's DELIVERED_TO_NS stage replaces the route's carrier timeout
// (15 min here): the message is retried once it passes. The result the
// carrier reports with its acceptance is the message's.
func TestPushStageTimeoutOfTheSendBoundsItsWait(t *testing.T) {
	p, err := herald.ProfilePolicy(herald.ProfileLXMF)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, []herald.Route{{Name: "mesh", Carrier: &timedNetwork{}, Policy: p}})
	r.start()
	m := r.send(herald.SendRequest{Route: "mesh", Target: "a", Text: "hi"})
	r.settle()
	if got := r.get(m.ID); got.Status != herald.StatusDeliveredToNS || got.Deadline.Sub(r.clock.Now()) != 12*time.Second {
		t.Fatalf("accepted: %s with its deadline in %v, want DELIVERED_TO_NS for 12s", got.Status, got.Deadline.Sub(r.clock.Now()))
	}
	if got := r.get(m.ID); got.Result["method"] != "direct" || got.View().Result["method"] != "direct" {
		t.Errorf("result %v, want the carrier's", got.Result)
	}
	r.advance(12 * time.Second)
	if got := r.get(m.ID); got.Status != herald.StatusToRetry || got.Attempt != 1 {
		t.Fatalf("12 s later: %s at attempt %d, want TO_RETRY", got.Status, got.Attempt)
	}
}

// messageNetwork is a network that also delivers messages to herald
// itself: its "message" event is an InboundMessage of type lxmf.message.
type messageNetwork struct{ network }

func (n *messageNetwork) ReadEvent(eventType, ct string, body []byte) (herald.Inbound, bool, error) {
	if eventType == "message" {
		return herald.Inbound{Kind: herald.InboundMessage, Reason: string(herald.EventLXMFMessage), Uplink: body}, true, nil
	}
	if eventType == "odd" {
		return herald.Inbound{Kind: herald.InboundMessage, Reason: "odd.message", Uplink: body}, true, nil
	}
	return n.network.ReadEvent(eventType, ct, body)
}

// TestPushMessageToHeraldGoesToItsSubscribersAtOnce: a message the
// network delivered to herald itself (an LXMF message to its address)
// reaches the subscribers of its type, with its body, without the 10 s an
// uplink waits for its ack; one of a type herald does not know is dropped.
func TestPushMessageToHeraldGoesToItsSubscribersAtOnce(t *testing.T) {
	p, err := herald.ProfilePolicy(herald.ProfileLXMF)
	if err != nil {
		t.Fatal(err)
	}
	all, only := &recordingSink{}, &recordingSink{}
	r := newRig(t, []herald.Route{{Name: "mesh", Carrier: &messageNetwork{}, Policy: p}},
		herald.Subscriber{Name: "all", Sink: all},
		herald.Subscriber{Name: "ends", Sink: only, Types: []herald.Status{herald.StatusDeliveryFailed}})
	r.start()
	for _, typ := range []string{"message", "odd"} {
		if err := r.eng.Ingest(context.Background(), "mesh", typ, "application/json", []byte(`{"source":"ab","content":"hi `+typ+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	r.settle()
	got := all.delivered()
	if len(got) != 1 || got[0].Type != herald.EventLXMFMessage || string(got[0].LXMF) != `{"source":"ab","content":"hi message"}` || got[0].Uplink != nil {
		t.Fatalf("the subscriber of every type got %+v, want the lxmf.message event alone", got)
	}
	if n := len(only.delivered()); n != 0 {
		t.Errorf("a subscriber of DELIVERY_FAILED only got %d events", n)
	}
	if typ, err := herald.ParseEventType("lxmf.message"); err != nil || typ != herald.EventLXMFMessage {
		t.Errorf("ParseEventType(lxmf.message) = %q, %v", typ, err)
	}
}

// listenOnlyNetwork is a network whose events come through its own
// connection only.
type listenOnlyNetwork struct{ network }

func (*listenOnlyNetwork) ListenOnly() {}

// TestListenOnlyRouteTakesNoHTTPEvents: the HTTP ingress takes no event
// for a route whose carrier listens to its network itself and says so.
func TestListenOnlyRouteTakesNoHTTPEvents(t *testing.T) {
	p, _ := herald.ProfilePolicy(herald.ProfileLXMF)
	r := newRig(t, []herald.Route{{Name: "mesh", Carrier: &listenOnlyNetwork{}, Policy: p}, {Name: "lora", Carrier: &network{}, Policy: p}})
	if _, ok := r.eng.IngressSecret("mesh"); ok {
		t.Error("a listen-only route takes HTTP events")
	}
	if secret, ok := r.eng.IngressSecret("lora"); !ok || secret != "s3cret" {
		t.Errorf("another push route: %q, %v", secret, ok)
	}
}
