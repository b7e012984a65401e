package chirpstack

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chirpstack/chirpstack/api/go/v4/api"
	"github.com/chirpstack/chirpstack/api/go/v4/common"
	"github.com/chirpstack/chirpstack/api/go/v4/gw"
	"github.com/chirpstack/chirpstack/api/go/v4/integration"
)

const (
	token   = "test-token"
	secret  = "hook-secret"
	devA    = "0102030405060701"
	devC    = "0102030405060702"
	timeout = 10 * time.Second
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// hook is one request the HTTP integration made.
type hook struct {
	Event       string
	ContentType string
	Auth        string
	Body        []byte
}

// receiver is an HTTP integration endpoint that hands every request to the
// test.
func receiver(t *testing.T, status int) (string, chan hook) {
	t.Helper()
	ch := make(chan hook, 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost {
			t.Errorf("the integration used %s, not POST", r.Method)
		}
		ch <- hook{Event: r.URL.Query().Get("event"), ContentType: r.Header.Get("Content-Type"), Auth: r.Header.Get("Authorization"), Body: b}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/chirpstack", ch
}

// next returns the next request to the endpoint, which must be of event
// type want.
func next(t *testing.T, ch chan hook, want string) hook {
	t.Helper()
	select {
	case h := <-ch:
		if h.Event != want {
			t.Fatalf("next event is %q (%s); want %q", h.Event, h.Body, want)
		}
		return h
	case <-time.After(timeout):
		t.Fatalf("no %q event within %v", want, timeout)
	}
	return hook{}
}

// decode decodes a JSON event body as a ChirpStack consumer would.
func decode[M proto.Message](t *testing.T, h hook, m M) M {
	t.Helper()
	if h.ContentType != "application/json" {
		t.Errorf("Content-Type %q; want application/json", h.ContentType)
	}
	if err := protojson.Unmarshal(h.Body, m); err != nil {
		t.Fatalf("decode %s event %s: %v", h.Event, h.Body, err)
	}
	return m
}

// baseConfig is a perfect network with one Class-A and one Class-C device.
func baseConfig() Config {
	return Config{
		Tokens:  []string{token},
		Devices: []Device{{DevEUI: devA, Class: ClassA}, {DevEUI: devC, Class: ClassC}},
		Seed:    1,
	}
}

// start runs a simulator for the test, with the HTTP integration at url
// when url is set.
func start(t *testing.T, cfg Config, url string) *Sim {
	t.Helper()
	if url != "" {
		cfg.HTTP = &HTTPConfig{URL: url, Headers: map[string]string{"Authorization": "Bearer " + secret}}
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// client dials the simulator's gRPC API over TCP.
func client(t *testing.T, s *Sim) api.DeviceServiceClient {
	t.Helper()
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") {
		t.Fatalf("gRPC listener on %q; want a loopback port", s.Addr())
	}
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return api.NewDeviceServiceClient(conn)
}

// authed returns a context carrying the API token.
func authed(t *testing.T, tok string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
}

func enqueue(t *testing.T, c api.DeviceServiceClient, dev string, confirmed bool, data []byte) string {
	t.Helper()
	resp, err := c.Enqueue(authed(t, token), &api.EnqueueDeviceQueueItemRequest{QueueItem: &api.DeviceQueueItem{
		DevEui: dev, Confirmed: confirmed, FPort: 10, Data: data,
	}})
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	if !uuidRE.MatchString(resp.GetId()) {
		t.Fatalf("Enqueue returned id %q; want a UUID", resp.GetId())
	}
	return resp.GetId()
}

func queue(t *testing.T, c api.DeviceServiceClient, dev string) []*api.DeviceQueueItem {
	t.Helper()
	resp, err := c.GetQueue(authed(t, token), &api.GetDeviceQueueItemsRequest{DevEui: dev})
	if err != nil {
		t.Fatalf("GetQueue: %v", err)
	}
	if int(resp.GetTotalCount()) != len(resp.GetResult()) {
		t.Fatalf("GetQueue total_count %d for %d items", resp.GetTotalCount(), len(resp.GetResult()))
	}
	return resp.GetResult()
}

// TestConfirmedClassC enqueues a confirmed downlink to a Class-C device:
// the txack and then the device's uplink and the ack arrive at the HTTP
// integration in ChirpStack's JSON, carrying the queue item id.
func TestConfirmedClassC(t *testing.T) {
	url, hooks := receiver(t, http.StatusOK)
	s := start(t, baseConfig(), url)
	c := client(t, s)
	id := enqueue(t, c, devC, true, []byte{1, 2, 3})

	h := next(t, hooks, "txack")
	if h.Auth != "Bearer "+secret {
		t.Errorf("Authorization %q; want the configured header", h.Auth)
	}
	for _, key := range []string{`"queueItemId":"` + id + `"`, `"deviceInfo":{`, `"devEui":"` + devC + `"`, `"deviceClassEnabled":"CLASS_C"`, `"gatewayId":"`} {
		if !bytes.Contains(h.Body, []byte(key)) {
			t.Errorf("txack body %s lacks %s", h.Body, key)
		}
	}
	tx := decode(t, h, &integration.TxAckEvent{})
	if tx.GetQueueItemId() != id || tx.GetDeviceInfo().GetDevEui() != devC || tx.GetFCntDown() != 0 || tx.GetTime() == nil {
		t.Errorf("txack %v; want queue item %s of %s, fCntDown 0, a time", tx, id, devC)
	}
	if tx.GetTxInfo().GetTiming().GetImmediately() == nil {
		t.Errorf("Class-C txack timing %v; want immediately", tx.GetTxInfo().GetTiming())
	}

	up := decode(t, next(t, hooks, "up"), &integration.UplinkEvent{})
	if !uuidRE.MatchString(up.GetDeduplicationId()) || len(up.GetRxInfo()) != 1 || up.GetRxInfo()[0].GetGatewayId() == "" || up.GetFCnt() != 1 {
		t.Errorf("up %v; want a deduplicationId, one rxInfo with a gateway, fCnt 1", up)
	}
	h = next(t, hooks, "ack")
	if !bytes.Contains(h.Body, []byte(`"acknowledged":true`)) || !bytes.Contains(h.Body, []byte(`"deduplicationId":"`+up.GetDeduplicationId()+`"`)) {
		t.Errorf("ack body %s; want acknowledged true and the uplink's deduplicationId", h.Body)
	}
	ack := decode(t, h, &integration.AckEvent{})
	if ack.GetQueueItemId() != id || !ack.GetAcknowledged() || ack.GetDeduplicationId() != up.GetDeduplicationId() {
		t.Errorf("ack %v; want item %s acknowledged in uplink %s", ack, id, up.GetDeduplicationId())
	}
	if q := queue(t, c, devC); len(q) != 0 {
		t.Errorf("queue after the ack: %v; want empty", q)
	}
	st := s.Stats()
	if st.Enqueued != 1 || st.Transmitted != 1 || st.Acked != 1 || st.Nacked != 0 {
		t.Errorf("stats %+v", st)
	}
	if err := s.Flush(authed(t, token)); err != nil {
		t.Fatal(err)
	}
	for _, e := range s.Events() {
		if !e.Delivered || len(e.Deliveries) != 1 || e.Deliveries[0].Status != http.StatusOK {
			t.Errorf("event %d %s: delivered %v %+v; want one 200", e.Seq, e.Type, e.Delivered, e.Deliveries)
		}
	}
}

// TestAuth checks the authorization metadata.
func TestAuth(t *testing.T) {
	s := start(t, baseConfig(), "")
	c := client(t, s)
	req := &api.EnqueueDeviceQueueItemRequest{QueueItem: &api.DeviceQueueItem{DevEui: devC, FPort: 1, Data: []byte{1}}}
	bg, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for name, ctx := range map[string]context.Context{
		"none":      bg,
		"bad token": authed(t, "nope"),
		"no Bearer": metadata.AppendToOutgoingContext(bg, "authorization", token),
	} {
		if _, err := c.Enqueue(ctx, req); status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: Enqueue: %v; want Unauthenticated", name, err)
		}
		if _, err := c.GetQueue(ctx, &api.GetDeviceQueueItemsRequest{DevEui: devC}); status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: GetQueue: %v; want Unauthenticated", name, err)
		}
	}
	if n := len(s.Enqueued()); n != 0 {
		t.Errorf("%d items enqueued without a valid token", n)
	}
	if _, err := c.Get(authed(t, token), &api.GetDeviceRequest{DevEui: devC}); status.Code(err) != codes.Unimplemented {
		t.Errorf("Get: %v; want Unimplemented", err)
	}
	if _, err := c.Enqueue(authed(t, token), req); err != nil {
		t.Errorf("Enqueue with the token: %v", err)
	}
}

// TestValidation checks Enqueue's answers to what ChirpStack refuses.
func TestValidation(t *testing.T) {
	s := start(t, baseConfig(), "")
	c := client(t, s)
	item := func(dev string, fPort uint32) *api.EnqueueDeviceQueueItemRequest {
		return &api.EnqueueDeviceQueueItemRequest{QueueItem: &api.DeviceQueueItem{DevEui: dev, FPort: fPort, Data: []byte{1}}}
	}
	for _, tc := range []struct {
		name string
		req  *api.EnqueueDeviceQueueItemRequest
		want codes.Code
	}{
		{"unknown device", item("ffffffffffffffff", 1), codes.NotFound},
		{"f_port 0", item(devA, 0), codes.InvalidArgument},
		{"f_port 256", item(devA, 256), codes.InvalidArgument},
		{"no queue_item", &api.EnqueueDeviceQueueItemRequest{}, codes.InvalidArgument},
		{"malformed DevEUI", item("xyz", 1), codes.Internal},
		{"f_port 255", item(devA, 255), codes.OK},
	} {
		_, err := c.Enqueue(authed(t, token), tc.req)
		if status.Code(err) != tc.want {
			t.Errorf("%s: Enqueue: %v; want %v", tc.name, err, tc.want)
		}
	}
	if _, err := c.GetQueue(authed(t, token), &api.GetDeviceQueueItemsRequest{DevEui: "ffffffffffffffff"}); status.Code(err) != codes.NotFound {
		t.Errorf("GetQueue of an unknown device: %v; want NotFound", err)
	}
	if _, err := c.FlushQueue(authed(t, token), &api.FlushDeviceQueueRequest{DevEui: "ffffffffffffffff"}); status.Code(err) != codes.NotFound {
		t.Errorf("FlushQueue of an unknown device: %v; want NotFound", err)
	}
	if n := len(s.Enqueued()); n != 1 {
		t.Errorf("%d items enqueued; want 1", n)
	}
}

// TestUnknownDeviceModes checks the answers ChirpStack gives for an
// unknown device with an admin and with a tenant API key.
func TestUnknownDeviceModes(t *testing.T) {
	const unknown = "ffffffffffffffff"
	for mode, want := range map[UnknownDevice][3]codes.Code{
		UnknownDeviceAdminKey:  {codes.Internal, codes.OK, codes.OK},
		UnknownDeviceTenantKey: {codes.Unauthenticated, codes.Unauthenticated, codes.Unauthenticated},
	} {
		cfg := baseConfig()
		cfg.UnknownDevice = mode
		c := client(t, start(t, cfg, ""))
		_, err1 := c.Enqueue(authed(t, token), &api.EnqueueDeviceQueueItemRequest{QueueItem: &api.DeviceQueueItem{DevEui: unknown, FPort: 1}})
		resp, err2 := c.GetQueue(authed(t, token), &api.GetDeviceQueueItemsRequest{DevEui: unknown})
		_, err3 := c.FlushQueue(authed(t, token), &api.FlushDeviceQueueRequest{DevEui: unknown})
		if got := [3]codes.Code{status.Code(err1), status.Code(err2), status.Code(err3)}; got != want {
			t.Errorf("%s: Enqueue, GetQueue, FlushQueue answered %v; want %v", mode, got, want)
		}
		if err2 == nil && len(resp.GetResult()) != 0 {
			t.Errorf("%s: GetQueue listed %v", mode, resp.GetResult())
		}
	}
}

// TestOversizePayload: a payload over the device's maximum is accepted,
// then dropped at transmission with a log event DOWNLINK_PAYLOAD_SIZE; the
// next item goes out.
func TestOversizePayload(t *testing.T) {
	url, hooks := receiver(t, http.StatusOK)
	cfg := baseConfig()
	cfg.Devices[1].MaxPayload = 0 // the default, 51
	s := start(t, cfg, url)
	c := client(t, s)
	big := enqueue(t, c, devC, false, make([]byte, DefaultMaxPayload+1))

	h := next(t, hooks, "log")
	for _, key := range []string{`"code":"DOWNLINK_PAYLOAD_SIZE"`, `"level":"ERROR"`, `"queue_item_id":"` + big + `"`} {
		if !bytes.Contains(h.Body, []byte(key)) {
			t.Errorf("log body %s lacks %s", h.Body, key)
		}
	}
	lg := decode(t, h, &integration.LogEvent{})
	if lg.GetCode() != integration.LogCode_DOWNLINK_PAYLOAD_SIZE || lg.GetLevel() != integration.LogLevel_ERROR ||
		lg.GetContext()["queue_item_id"] != big || lg.GetContext()["item_size"] != "52" || lg.GetContext()["max_payload_size"] != "51" {
		t.Errorf("log %v; want DOWNLINK_PAYLOAD_SIZE for %s, 52 > 51", lg, big)
	}
	fits := enqueue(t, c, devC, false, make([]byte, DefaultMaxPayload))
	if tx := decode(t, next(t, hooks, "txack"), &integration.TxAckEvent{}); tx.GetQueueItemId() != fits {
		t.Errorf("txack of %s; want %s", tx.GetQueueItemId(), fits)
	}
	if st := s.Stats(); st.Oversize != 1 || st.Transmitted != 1 {
		t.Errorf("stats %+v; want 1 oversize, 1 transmitted", st)
	}
}

// TestClassAWaitsForUplink: a Class-A device gets its downlink only in
// answer to an uplink; GetQueue lists the item until then.
func TestClassAWaitsForUplink(t *testing.T) {
	url, hooks := receiver(t, http.StatusOK)
	s := start(t, baseConfig(), url)
	c := client(t, s)
	id := enqueue(t, c, devA, false, []byte{7})
	// The simulator handles an enqueue to the end before answering: with
	// zero delays anything it would send for it exists now.
	if ev := s.Events(); len(ev) != 0 {
		t.Fatalf("events before any uplink: %+v", ev)
	}
	q := queue(t, c, devA)
	if len(q) != 1 || q[0].GetId() != id || q[0].GetIsPending() || q[0].GetFPort() != 10 || !bytes.Equal(q[0].GetData(), []byte{7}) {
		t.Fatalf("queue before the uplink: %v; want item %s, not pending", q, id)
	}
	dedup, err := s.Uplink(devA, 2, []byte("hi"))
	if err != nil {
		t.Fatal(err)
	}
	up := decode(t, next(t, hooks, "up"), &integration.UplinkEvent{})
	if up.GetDeduplicationId() != dedup || up.GetFPort() != 2 || string(up.GetData()) != "hi" {
		t.Errorf("up %v; want deduplicationId %s, fPort 2, data hi", up, dedup)
	}
	tx := decode(t, next(t, hooks, "txack"), &integration.TxAckEvent{})
	if tx.GetQueueItemId() != id || tx.GetTxInfo().GetTiming().GetDelay() == nil {
		t.Errorf("txack %v; want item %s in RX1 (delay timing)", tx, id)
	}
	if q := queue(t, c, devA); len(q) != 0 {
		t.Errorf("queue after the transmission of an unconfirmed item: %v; want empty", q)
	}
}

// TestGetQueuePending: a confirmed Class-A item is listed, then listed as
// pending once sent, then gone once the device acknowledged it.
func TestGetQueuePending(t *testing.T) {
	cfg := baseConfig()
	cfg.AckDelay = -1 // the device answers in its next uplink only
	s := start(t, cfg, "")
	c := client(t, s)
	id := enqueue(t, c, devA, true, []byte{1})
	if q := queue(t, c, devA); len(q) != 1 || q[0].GetIsPending() {
		t.Fatalf("queue: %v; want one item not pending", q)
	}
	if _, err := s.Uplink(devA, 1, nil); err != nil {
		t.Fatal(err)
	}
	if q := queue(t, c, devA); len(q) != 1 || q[0].GetId() != id || !q[0].GetIsPending() {
		t.Fatalf("queue after the transmission: %v; want %s pending", q, id)
	}
	dedup, err := s.Uplink(devA, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if q := queue(t, c, devA); len(q) != 0 {
		t.Fatalf("queue after the device's ACK: %v; want empty", q)
	}
	ack, err := s.WaitFor(authed(t, token), func(e Event) bool { return e.Type == "ack" })
	if err != nil {
		t.Fatal(err)
	}
	if a := ack.Message.(*integration.AckEvent); !a.GetAcknowledged() || a.GetQueueItemId() != id || a.GetDeduplicationId() != dedup {
		t.Errorf("ack %v; want %s acknowledged by uplink %s", a, id, dedup)
	}

	// FlushQueue empties a queue.
	enqueue(t, c, devA, false, []byte{1})
	enqueue(t, c, devA, true, []byte{2})
	if _, err := c.FlushQueue(authed(t, token), &api.FlushDeviceQueueRequest{DevEui: devA}); err != nil {
		t.Fatal(err)
	}
	if q := queue(t, c, devA); len(q) != 0 {
		t.Errorf("queue after FlushQueue: %v", q)
	}
}

// TestNack: a device that answers a confirmed downlink without the ACK bit
// gets ack acknowledged=false — Class A at that uplink, Class C at the
// timeout.
func TestNack(t *testing.T) {
	url, hooks := receiver(t, http.StatusOK)
	cfg := baseConfig()
	cfg.NackRate = 1
	cfg.ClassCTimeout = 30 * time.Millisecond
	s := start(t, cfg, url)
	c := client(t, s)

	idA := enqueue(t, c, devA, true, []byte{1})
	if _, err := s.Uplink(devA, 1, nil); err != nil {
		t.Fatal(err)
	}
	next(t, hooks, "up")
	next(t, hooks, "txack")
	answer := decode(t, next(t, hooks, "up"), &integration.UplinkEvent{}) // the device's answer, without ACK
	h := next(t, hooks, "ack")
	if !bytes.Contains(h.Body, []byte(`"acknowledged":false,"fCntDown":0}`)) {
		t.Errorf("ack body %s: want acknowledged false and fCntDown 0 written out, as ChirpStack's JSON does", h.Body)
	}
	ack := decode(t, h, &integration.AckEvent{})
	if ack.GetAcknowledged() || ack.GetQueueItemId() != idA || ack.GetDeduplicationId() != answer.GetDeduplicationId() {
		t.Errorf("Class-A ack %v; want %s not acknowledged, in uplink %s", ack, idA, answer.GetDeduplicationId())
	}

	idC := enqueue(t, c, devC, true, []byte{1})
	next(t, hooks, "txack")
	next(t, hooks, "up")
	ack = decode(t, next(t, hooks, "ack"), &integration.AckEvent{})
	if ack.GetAcknowledged() || ack.GetQueueItemId() != idC || ack.GetDeduplicationId() != "" {
		t.Errorf("Class-C ack %v; want %s not acknowledged, after the timeout (no deduplicationId)", ack, idC)
	}
	if tx := s.Transmissions(); len(tx) != 2 || !tx[0].Nack || !tx[1].Nack {
		t.Errorf("transmissions %+v; want two NACKed", tx)
	}
}

// TestLoss: a lost confirmed downlink is never answered; Class C times out.
func TestLoss(t *testing.T) {
	url, hooks := receiver(t, http.StatusOK)
	cfg := baseConfig()
	cfg.Loss = 1
	cfg.ClassCTimeout = 30 * time.Millisecond
	s := start(t, cfg, url)
	c := client(t, s)
	id := enqueue(t, c, devC, true, []byte{1})
	next(t, hooks, "txack")
	ack := decode(t, next(t, hooks, "ack"), &integration.AckEvent{}) // no uplink in between
	if ack.GetAcknowledged() || ack.GetQueueItemId() != id {
		t.Errorf("ack %v; want %s not acknowledged", ack, id)
	}
	if st := s.Stats(); st.Lost != 1 || st.Uplinks != 0 || st.Nacked != 1 {
		t.Errorf("stats %+v; want 1 lost, no uplink, 1 nacked", st)
	}
}

// TestExpired: an item whose expires_at passed before its transmission is
// dropped with a log event EXPIRED; the next one goes out.
func TestExpired(t *testing.T) {
	url, hooks := receiver(t, http.StatusOK)
	s := start(t, baseConfig(), url)
	c := client(t, s)
	resp, err := c.Enqueue(authed(t, token), &api.EnqueueDeviceQueueItemRequest{QueueItem: &api.DeviceQueueItem{
		DevEui: devA, FPort: 3, Data: []byte{1}, ExpiresAt: timestamppb.New(time.Now().Add(-time.Second)),
	}})
	if err != nil {
		t.Fatalf("Enqueue of an item already expired (ChirpStack accepts it): %v", err)
	}
	fresh := enqueue(t, c, devA, false, []byte{2})
	if q := queue(t, c, devA); len(q) != 2 || q[0].GetExpiresAt() == nil {
		t.Fatalf("queue %v; want 2 items, the first with expires_at", q)
	}
	if _, err := s.Uplink(devA, 1, nil); err != nil {
		t.Fatal(err)
	}
	next(t, hooks, "up")
	lg := decode(t, next(t, hooks, "log"), &integration.LogEvent{})
	if lg.GetCode() != integration.LogCode_EXPIRED || lg.GetContext()["queue_item_id"] != resp.GetId() {
		t.Errorf("log %v; want EXPIRED of %s", lg, resp.GetId())
	}
	if tx := decode(t, next(t, hooks, "txack"), &integration.TxAckEvent{}); tx.GetQueueItemId() != fresh {
		t.Errorf("txack of %s; want %s", tx.GetQueueItemId(), fresh)
	}
}

// TestProtobufAndFailures: the Protobuf encoding, two endpoints, and a
// failing endpoint that gets each event once (ChirpStack does not retry).
func TestProtobufAndFailures(t *testing.T) {
	okURL, okHooks := receiver(t, http.StatusOK)
	badURL, badHooks := receiver(t, http.StatusInternalServerError)
	cfg := baseConfig()
	cfg.HTTP = &HTTPConfig{URL: okURL + ", " + badURL, Encoding: Protobuf}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := enqueue(t, client(t, s), devC, false, []byte{9})
	h := next(t, okHooks, "txack")
	if h.ContentType != "application/octet-stream" {
		t.Errorf("Content-Type %q; want application/octet-stream", h.ContentType)
	}
	var tx integration.TxAckEvent
	if err := proto.Unmarshal(h.Body, &tx); err != nil || tx.GetQueueItemId() != id {
		t.Errorf("protobuf txack: %v, %v; want item %s", &tx, err, id)
	}
	next(t, badHooks, "txack")
	if err := s.Flush(authed(t, token)); err != nil {
		t.Fatal(err)
	}
	if n := len(badHooks); n != 0 {
		t.Errorf("the failing endpoint got %d more requests; want none (no retry)", n)
	}
	ev := s.Events()
	if len(ev) != 1 || len(ev[0].Deliveries) != 2 || ev[0].Deliveries[0].Status != 200 || ev[0].Deliveries[1].Status != 500 || ev[0].Deliveries[1].Err == "" {
		t.Errorf("events %+v; want one, delivered 200 and 500", ev)
	}
	if st := s.Stats(); st.EventsFailed != 1 {
		t.Errorf("EventsFailed %d; want 1", st.EventsFailed)
	}
}

// TestJoinStatusPeriodic: joins at start, periodic uplinks with a status
// event every second one, and a Class-A downlink sent in answer to one.
func TestJoinStatusPeriodic(t *testing.T) {
	url, hooks := receiver(t, http.StatusOK)
	cfg := baseConfig()
	cfg.Devices = cfg.Devices[:1]
	cfg.JoinOnStart = true
	cfg.StatusEvery = 2
	cfg.UplinkInterval = 20 * time.Millisecond
	s := start(t, cfg, url)
	join := decode(t, next(t, hooks, "join"), &integration.JoinEvent{})
	if join.GetDeviceInfo().GetDevEui() != devA || join.GetDevAddr() == "" || join.GetDeviceInfo().GetDeviceClassEnabled() != common.DeviceClass_CLASS_A {
		t.Errorf("join %v", join)
	}
	id := enqueue(t, client(t, s), devA, false, []byte{1})
	// The periodic uplinks began at Start; the item goes out in answer to
	// the first one after the enqueue, and uplink 2 comes with a status.
	var last *integration.UplinkEvent
	var status *integration.StatusEvent
	for sawTx, sawStatus := false, false; !sawTx || !sawStatus; {
		select {
		case h := <-hooks:
			switch h.Event {
			case "up":
				up := decode(t, h, &integration.UplinkEvent{})
				if last != nil && up.GetFCnt() != last.GetFCnt()+1 || up.GetFPort() != 1 || len(up.GetData()) != 4 || up.GetDevAddr() != join.GetDevAddr() {
					t.Errorf("periodic up %v after %v", up, last)
				}
				if up.GetFCnt() == 2 && (status == nil || status.GetDeduplicationId() != up.GetDeduplicationId()) {
					t.Errorf("uplink 2 %v: want a status event with its deduplicationId before it, got %v", up, status)
				}
				last = up
			case "status":
				status, sawStatus = decode(t, h, &integration.StatusEvent{}), true
			case "txack":
				if tx := decode(t, h, &integration.TxAckEvent{}); tx.GetQueueItemId() != id || last == nil {
					t.Errorf("txack of %s after uplink %v; want %s after an uplink", tx.GetQueueItemId(), last, id)
				}
				sawTx = true
			default:
				t.Fatalf("unexpected %s event %s", h.Event, h.Body)
			}
		case <-time.After(timeout):
			t.Fatal("no txack and status within the timeout")
		}
	}
}

// TestDeterministic: the same seed and calls give the same ids and events.
func TestDeterministic(t *testing.T) {
	run := func() []string {
		cfg := baseConfig()
		cfg.NackRate, cfg.Loss = 0.5, 0.3
		cfg.AckDelay = -1
		s := start(t, cfg, "")
		c := client(t, s)
		var out []string
		for i := range 20 {
			out = append(out, enqueue(t, c, devA, i%2 == 0, []byte{byte(i)}))
			id, err := s.Uplink(devA, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, id)
		}
		for _, e := range s.Events() {
			b, err := Marshal(e.Message, JSON)
			if err != nil {
				t.Fatal(err)
			}
			b = regexp.MustCompile(`"(time|nsTime)":"[^"]*"`).ReplaceAll(b, nil)
			out = append(out, e.Type+" "+string(b))
		}
		s.Close()
		return out
	}
	a, b := run(), run()
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatalf("two runs differ:\n%s\n---\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}

// TestConfigErrors: a bad config is refused with a message naming the
// problem.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Tokens = nil }, "no API token"},
		{func(c *Config) { c.Devices = nil }, "no devices"},
		{func(c *Config) { c.Devices[0].DevEUI = "123" }, "DevEUI"},
		{func(c *Config) { c.Devices[1].DevEUI = devA }, "twice"},
		{func(c *Config) { c.Devices[0].Class = "B" }, "class"},
		{func(c *Config) { c.Loss = 2 }, "loss"},
		{func(c *Config) { c.HTTP = &HTTPConfig{URL: "ftp://x"} }, "HTTP integration endpoint"},
		{func(c *Config) { c.MQTT = &MQTTConfig{Server: "tcp://h:1", QoS: 3} }, "QoS"},
		{func(c *Config) { c.ApplicationID = "app" }, "application id"},
	} {
		cfg := baseConfig()
		tc.edit(&cfg)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: %v; want an error about %q", err, tc.want)
		}
	}
}

// TestQueueItemIDAndFPort: Enqueue ignores a given id unless told to keep
// it, and takes the FPort modulo 256, as ChirpStack does.
func TestQueueItemIDAndFPort(t *testing.T) {
	const given = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
	req := func(id string, fPort uint32) *api.EnqueueDeviceQueueItemRequest {
		return &api.EnqueueDeviceQueueItemRequest{QueueItem: &api.DeviceQueueItem{Id: id, DevEui: devA, FPort: fPort, Data: []byte{1}}}
	}
	c := client(t, start(t, baseConfig(), ""))
	resp, err := c.Enqueue(authed(t, token), req(given, 257))
	if err != nil || resp.GetId() == given || !uuidRE.MatchString(resp.GetId()) {
		t.Errorf("Enqueue with an id: %v, %v; want a new UUID", resp, err)
	}
	if q := queue(t, c, devA); len(q) != 1 || q[0].GetFPort() != 1 {
		t.Errorf("queue %v; want FPort 257 stored as 1", q)
	}

	cfg := baseConfig()
	cfg.HonorQueueItemID = true
	c = client(t, start(t, cfg, ""))
	if resp, err := c.Enqueue(authed(t, token), req(given, 1)); err != nil || resp.GetId() != given {
		t.Errorf("Enqueue with HonorQueueItemID: %v, %v; want id %s", resp, err, given)
	}
	if _, err := c.Enqueue(authed(t, token), req(given, 1)); status.Code(err) != codes.AlreadyExists {
		t.Errorf("Enqueue of the same id again: %v; want AlreadyExists", err)
	}
	if _, err := c.Enqueue(authed(t, token), req("not-a-uuid", 1)); status.Code(err) != codes.InvalidArgument {
		t.Errorf("Enqueue with a malformed id: %v; want InvalidArgument", err)
	}
}

// TestGatewayError: a refused transmission is logged (DOWNLINK_GATEWAY) and
// the item stays queued, not pending.
func TestGatewayError(t *testing.T) {
	url, hooks := receiver(t, http.StatusOK)
	cfg := baseConfig()
	cfg.GatewayErrorRate = 1
	s := start(t, cfg, url)
	c := client(t, s)
	id := enqueue(t, c, devA, true, []byte{1})
	if _, err := s.Uplink(devA, 1, nil); err != nil {
		t.Fatal(err)
	}
	next(t, hooks, "up")
	lg := decode(t, next(t, hooks, "log"), &integration.LogEvent{})
	if lg.GetCode() != integration.LogCode_DOWNLINK_GATEWAY || lg.GetDescription() != "TOO_LATE" {
		t.Errorf("log %v; want DOWNLINK_GATEWAY TOO_LATE", lg)
	}
	if q := queue(t, c, devA); len(q) != 1 || q[0].GetId() != id || q[0].GetIsPending() {
		t.Errorf("queue %v; want %s still queued, not pending", q, id)
	}
}

// TestMarshalJSON checks the JSON against what ChirpStack's pbjson serde
// writes: the integration messages' fields in declaration order with their
// default values, unset messages left out, gw messages without defaults.
func TestMarshalJSON(t *testing.T) {
	up := &integration.UplinkEvent{
		DeduplicationId: "d",
		DeviceInfo:      &integration.DeviceInfo{DevEui: "0102030405060708"},
		Data:            []byte{1, 2},
		RxInfo:          []*gw.UplinkRxInfo{{GatewayId: "g", Rssi: -50}},
	}
	b, err := Marshal(up, JSON)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"deduplicationId":"d",` +
		`"deviceInfo":{"tenantId":"","tenantName":"","applicationId":"","applicationName":"","deviceProfileId":"","deviceProfileName":"","deviceName":"","devEui":"0102030405060708","deviceClassEnabled":"CLASS_A","tags":{}},` +
		`"devAddr":"","adr":false,"dr":0,"fCnt":0,"fPort":0,"confirmed":false,"data":"AQI=",` +
		`"rxInfo":[{"gatewayId":"g","rssi":-50}],"regionConfigId":""}`
	if string(b) != want {
		t.Errorf("Marshal:\n got %s\nwant %s", b, want)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 120000000, time.UTC)
	b, err = Marshal(&integration.LogEvent{Time: timestamppb.New(at), Code: integration.LogCode_EXPIRED}, JSON)
	if err != nil || string(b) != `{"time":"2026-01-02T03:04:05.120+00:00","level":"INFO","code":"EXPIRED","description":"","context":{}}` {
		t.Errorf("Marshal of a log event: %s, %v", b, err)
	}
	var back integration.LogEvent
	if err := protojson.Unmarshal(b, &back); err != nil || !back.GetTime().AsTime().Equal(at) {
		t.Errorf("protojson reads the log event back as %v, %v", &back, err)
	}
	b, err = Marshal(&integration.TxAckEvent{TxInfo: downlinkTxInfo(true)}, JSON)
	if want := `"txInfo":{"frequency":868100000,"power":14,"modulation":{"lora":{"bandwidth":125000,"spreadingFactor":12,"codeRate":"CR_4_5","polarizationInversion":true}},"timing":{"delay":{"delay":"1s"}}}`; err != nil || !bytes.Contains(b, []byte(want)) {
		t.Errorf("Marshal of a txack: %s, %v; want %s", b, err, want)
	}
}
