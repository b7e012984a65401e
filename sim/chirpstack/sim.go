package chirpstack

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/chirpstack/chirpstack/api/go/v4/api"
)

// closeGrace bounds how long Close waits for calls in flight and for the
// events not yet delivered.
const closeGrace = 2 * time.Second

// ErrClosed is returned for work asked of a closed Sim.
var ErrClosed = errors.New("chirpstack sim: closed")

// QueueItem is a downlink accepted into a device queue, by the gRPC API or
// an MQTT command.
type QueueItem struct {
	ID          string
	DevEUI      string
	FPort       uint32
	Confirmed   bool
	Data        []byte
	IsEncrypted bool
	FCntDown    uint32    // as given for an encrypted item; else set when first sent (Queue shows it)
	ExpiresAt   time.Time // zero: never
	EnqueuedAt  time.Time
	Source      string // "grpc" or "mqtt"
}

// Transmission is one attempt to send a queue item to its device.
type Transmission struct {
	QueueItemID string
	DevEUI      string
	DownlinkID  uint32
	FCntDown    uint32
	Confirmed   bool
	At          time.Time // of the gateway's TX acknowledgement
	// GatewayError is the gateway's refusal ("TOO_LATE"); then the item
	// was not sent and stays queued.
	GatewayError string
	// Flushed: the item was flushed from the queue while the gateway had
	// it; ChirpStack then sends no event.
	Flushed bool
	// Lost: the device never received it. Nack: it received it (confirmed)
	// and answered without the ACK bit.
	Lost, Nack bool
}

// Command is a message received on an MQTT command topic.
type Command struct {
	Topic       string
	Payload     []byte
	At          time.Time
	QueueItemID string // of the item enqueued, if it was
	Err         string // why it was refused (ChirpStack only logs this)
}

// Event is an integration event the simulator produced.
type Event struct {
	Seq    int    // 1, 2, … in the order produced
	Type   string // up, join, ack, txack, log, status
	DevEUI string
	// QueueItemID is the queue item an ack or txack event is about, or the
	// queue_item_id of a log event's context.
	QueueItemID string
	// Message is the integration message (*integration.UplinkEvent,
	// AckEvent, TxAckEvent, LogEvent, JoinEvent, StatusEvent); read only.
	Message proto.Message
	At      time.Time
	// Delivered is set once every integration was tried, with the
	// outcome of each in Deliveries.
	Delivered  bool
	Deliveries []Delivery
}

// Delivery is the outcome of sending one event to one integration target.
type Delivery struct {
	Target string // the HTTP URL, or mqtt:<topic>
	Status int    // HTTP status; 0 for MQTT and for network errors
	Err    string
}

// Stats counts what the simulator did.
type Stats struct {
	Enqueued      int // queue items accepted
	Transmitted   int // items the gateway sent (txack events)
	Acked         int // ack events with acknowledged=true
	Nacked        int // ack events with acknowledged=false
	Expired       int // log events EXPIRED
	Oversize      int // log events DOWNLINK_PAYLOAD_SIZE
	FCntDown      int // log events F_CNT_DOWN
	GatewayErrors int // log events DOWNLINK_GATEWAY
	Lost          int // transmitted items the device did not receive
	Uplinks       int
	Events        int // events produced
	EventsFailed  int // deliveries that failed (non-2xx, network, MQTT)
}

// Sim is a ChirpStack v4 network server with simulated devices: the
// DeviceService queue methods over gRPC, and events through the HTTP and
// MQTT integrations. Its methods are safe for concurrent use.
type Sim struct {
	cfg     Config
	devices map[string]*device
	order   []*device
	tokens  [][]byte

	mu       sync.Mutex
	tasks    []func() // run in order by do, after the call that queued them
	rng      *rand.Rand
	idRng    *rand.Rand
	started  bool // Start was called
	running  bool // Start succeeded: the posters run
	closed   bool
	timers   map[*time.Timer]struct{}
	changed  chan struct{} // closed and replaced whenever something is recorded
	stats    Stats
	items    []QueueItem
	txs      []Transmission
	commands []Command
	events   []*Event
	seq      int

	// posters deliver the events to the integrations; each device's go
	// to one of them (device.poster).
	posters   []*poster
	pending   int // events produced for the integrations, not yet delivered
	pubStop   bool
	pubCtx    context.Context
	pubCancel context.CancelFunc
	pubDone   chan struct{}

	ln        net.Listener
	srv       *grpc.Server
	serveErr  chan error
	http      *http.Client
	mqtt      mqtt.Client
	closeOnce sync.Once
}

// New checks cfg and returns a Sim that Start will run.
func New(cfg Config) (*Sim, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	seed := uint64(cfg.Seed)
	s := &Sim{
		cfg:     cfg,
		devices: make(map[string]*device, len(cfg.Devices)),
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		idRng:   rand.New(rand.NewPCG(seed^0x5851f42d4c957f2d, seed)),
		timers:  map[*time.Timer]struct{}{},
		changed: make(chan struct{}),
		pubDone: make(chan struct{}),
	}
	workers := 1
	if cfg.HTTP != nil {
		workers = max(cfg.HTTP.Workers, 1)
	}
	for range workers {
		s.posters = append(s.posters, &poster{wake: make(chan struct{}, 1)})
	}
	for _, t := range cfg.Tokens {
		s.tokens = append(s.tokens, []byte(t))
	}
	for i, d := range cfg.Devices {
		dev := &device{cfg: d, eui: d.DevEUI, devAddr: d.DevEUI[8:], poster: i % workers}
		s.devices[dev.eui] = dev
		s.order = append(s.order, dev)
	}
	s.pubCtx, s.pubCancel = context.WithCancel(context.Background())
	if cfg.HTTP != nil {
		s.http = &http.Client{
			Timeout:       cfg.HTTP.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		if workers > 1 {
			// Keep a connection per poster, rather than the default
			// transport's two per host, so that they do not churn.
			t := http.DefaultTransport.(*http.Transport).Clone()
			t.MaxIdleConnsPerHost = workers
			s.http.Transport = t
		}
	}
	return s, nil
}

// Config returns the configuration in use, defaults filled in.
func (s *Sim) Config() Config { return s.cfg }

// Start listens on Config.Listen, connects the MQTT integration (when
// configured; it fails when the broker does not accept the connection and
// the command subscription in time), and starts serving, the devices'
// uplinks and the event posters.
func (s *Sim) Start() error {
	s.mu.Lock()
	if s.started || s.closed {
		s.mu.Unlock()
		return errors.New("chirpstack sim: Start called twice, or after Close")
	}
	s.started = true
	s.mu.Unlock()

	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("chirpstack sim: gRPC listener: %w", err)
	}
	if s.cfg.MQTT != nil {
		if err := s.connectMQTT(); err != nil {
			ln.Close()
			return err
		}
	}
	s.ln = ln
	s.srv = grpc.NewServer(
		grpc.ChainUnaryInterceptor(s.authUnary),
		grpc.ChainStreamInterceptor(s.authStream),
	)
	api.RegisterDeviceServiceServer(s.srv, &deviceService{s: s})
	s.serveErr = make(chan error, 1)
	go func() { s.serveErr <- s.srv.Serve(ln) }()
	s.mu.Lock()
	s.running = true
	s.mu.Unlock()
	var posting sync.WaitGroup
	for _, p := range s.posters {
		posting.Go(func() { s.publish(p) })
	}
	go func() {
		posting.Wait()
		close(s.pubDone)
	}()
	s.do(s.boot)
	return nil
}

// Serve runs the simulator until ctx ends, then closes it. It returns an
// error when it cannot start or the gRPC server fails.
func (s *Sim) Serve(ctx context.Context) error {
	if err := s.Start(); err != nil {
		return err
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-s.serveErr:
		if errors.Is(err, grpc.ErrServerStopped) {
			err = nil
		}
	}
	return errors.Join(err, s.Close())
}

// Addr returns the gRPC listener's address (host:port), "" before Start.
func (s *Sim) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops the gRPC server (waiting briefly for calls in flight), the
// devices and timers, delivers the events already produced (for up to two
// seconds), and disconnects from the MQTT broker.
func (s *Sim) Close() error {
	s.closeOnce.Do(func() {
		if s.srv != nil {
			done := make(chan struct{})
			go func() { s.srv.GracefulStop(); close(done) }()
			select {
			case <-done:
			case <-time.After(closeGrace):
				s.srv.Stop()
				<-done
			}
		}
		s.mu.Lock()
		s.closed = true
		for t := range s.timers {
			t.Stop()
		}
		clear(s.timers)
		s.tasks = nil
		running := s.running
		s.pubStop = true
		s.notify()
		s.mu.Unlock()
		if running {
			s.wakePublisher()
			select {
			case <-s.pubDone:
			case <-time.After(closeGrace):
				s.pubCancel()
				<-s.pubDone
			}
		}
		s.pubCancel()
		if s.mqtt != nil {
			s.mqtt.Disconnect(250)
		}
	})
	return nil
}

// do runs f under the lock, then every task f and its tasks queued, in
// order. It reports false (and runs nothing) once the Sim is closed.
func (s *Sim) do(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	f()
	for len(s.tasks) > 0 && !s.closed {
		t := s.tasks[0]
		s.tasks[0] = nil
		s.tasks = s.tasks[1:]
		t()
	}
	return true
}

// later queues f to run after the current task. Lock held.
func (s *Sim) later(f func()) { s.tasks = append(s.tasks, f) }

// after runs f after d: at once (queued) when d <= 0, else from a timer.
// Lock held.
func (s *Sim) after(d time.Duration, f func()) *time.Timer {
	if d <= 0 {
		s.later(f)
		return nil
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		s.do(func() {
			if _, ok := s.timers[t]; !ok {
				return // stopped meanwhile
			}
			delete(s.timers, t)
			f()
		})
	})
	s.timers[t] = struct{}{}
	return t
}

// stopTimer stops a timer made by after. Lock held.
func (s *Sim) stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
		delete(s.timers, t)
	}
}

// notify wakes the waiters on s.changed. Lock held.
func (s *Sim) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Sim) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// validToken reports whether tok is a configured API token.
func (s *Sim) validToken(tok string) bool {
	ok := 0
	for _, t := range s.tokens {
		ok |= subtle.ConstantTimeCompare(t, []byte(tok))
	}
	return ok == 1
}

// Stats returns the counts so far.
func (s *Sim) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Enqueued returns every queue item accepted, in order.
func (s *Sim) Enqueued() []QueueItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.items)
}

// Transmissions returns every transmission attempt, in order.
func (s *Sim) Transmissions() []Transmission {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.txs)
}

// Commands returns every message received on an MQTT command topic.
func (s *Sim) Commands() []Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.commands)
}

// Events returns every event produced so far, in order.
func (s *Sim) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Event, len(s.events))
	for i, e := range s.events {
		out[i] = *e
		out[i].Deliveries = slices.Clone(e.Deliveries)
	}
	return out
}

// Queue returns the items queued for a device now, as GetQueue lists them.
func (s *Sim) Queue(devEUI string) ([]QueueItem, bool) {
	eui, problem := apiEUI(devEUI)
	s.mu.Lock()
	defer s.mu.Unlock()
	dev := s.devices[eui]
	if problem != "" || dev == nil {
		return nil, false
	}
	out := make([]QueueItem, len(dev.queue))
	for i, qi := range dev.queue {
		out[i] = qi.QueueItem
	}
	return out, true
}

// WaitFor waits until an event for which match returns true has been
// produced (not necessarily delivered) and returns it. It needs records.
func (s *Sim) WaitFor(ctx context.Context, match func(Event) bool) (Event, error) {
	if s.cfg.DisableRecords {
		return Event{}, errors.New("chirpstack sim: WaitFor needs records (DisableRecords is set)")
	}
	next := 0
	for {
		s.mu.Lock()
		for ; next < len(s.events); next++ {
			e := *s.events[next]
			if match(e) {
				e.Deliveries = slices.Clone(e.Deliveries)
				s.mu.Unlock()
				return e, nil
			}
		}
		ch, closed := s.changed, s.closed
		s.mu.Unlock()
		if closed {
			return Event{}, ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// Flush waits until every event produced so far was delivered to the
// integrations (or failed to be).
func (s *Sim) Flush(ctx context.Context) error {
	for {
		s.mu.Lock()
		n, ch, stopped := s.pending, s.changed, s.closed && s.pubStop
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		if stopped {
			select {
			case <-s.pubDone:
				return nil
			default:
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Uplink makes a device send an uplink now (a Class-A device's downlink
// opportunity); it returns the uplink's deduplication id. The device sets
// the ACK bit when it owes an acknowledgement.
func (s *Sim) Uplink(devEUI string, fPort uint32, data []byte) (string, error) {
	dev, err := s.device(devEUI)
	if err != nil {
		return "", err
	}
	if fPort > 255 {
		return "", fmt.Errorf("chirpstack sim: uplink FPort %d: want 0..255", fPort)
	}
	var id string
	if !s.do(func() { id = s.uplink(dev, fPort, slices.Clone(data)) }) {
		return "", ErrClosed
	}
	return id, nil
}

// Join makes a device (re)join: a join event, a new DevAddr, frame
// counters reset and, with FlushQueueOnJoin, its queue flushed. It
// returns the join's deduplication id.
func (s *Sim) Join(devEUI string) (string, error) {
	dev, err := s.device(devEUI)
	if err != nil {
		return "", err
	}
	var id string
	if !s.do(func() { id = s.join(dev) }) {
		return "", ErrClosed
	}
	return id, nil
}

func (s *Sim) device(devEUI string) (*device, error) {
	eui, problem := apiEUI(devEUI)
	if problem != "" {
		return nil, fmt.Errorf("chirpstack sim: DevEUI %q: %s", devEUI, problem)
	}
	dev := s.devices[eui]
	if dev == nil {
		return nil, fmt.Errorf("chirpstack sim: no device %s", eui)
	}
	return dev, nil
}
