package herald

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldmq/herald/clock"
)

// Config configures an Engine.
type Config struct {
	// Store persists messages. Required.
	Store Store
	// Routes are the configured routes. At least one is required.
	Routes []Route
	// Subscribers receive outcome events.
	Subscribers []Subscriber
	// Clock tells every loop the time and wakes it for its next turn.
	// Defaults to the system clock.
	Clock clock.Clock
	// Logger receives a line for everything that goes wrong. Defaults to slog.Default().
	Logger *slog.Logger
	// Observer is told about transitions and problems (metrics). Defaults to none.
	Observer Observer
	// Concurrency bounds the sends in flight at once. Defaults to 64.
	Concurrency int
	// ClaimBatch bounds the messages claimed in one store call; claims run
	// ahead of the free send slots by at most twice as many. Defaults to 256.
	ClaimBatch int
	// PollInterval is how often the dispatcher looks for due work without
	// being woken, and the outbox for due events. Defaults to 250ms.
	PollInterval time.Duration
	// ReapInterval is how often the reaper runs. Defaults to 2s.
	ReapInterval time.Duration
	// Retention is how long terminal messages, and room events, are kept.
	// Defaults to 7 days.
	Retention time.Duration
	// PruneInterval is how often the pruner runs. Defaults to 5 minutes.
	PruneInterval time.Duration
	// DrainBudget bounds the startup drain. Defaults to 60s.
	DrainBudget time.Duration
	// Health holds the thresholds of Health. Defaults to DefaultHealthThresholds.
	Health *HealthThresholds
	// Random returns a number in [0, 1) for retry jitter; sends and the
	// reaper call it from several goroutines at once. Defaults to
	// math/rand/v2.
	Random func() float64
	// Tracer traces sends and carrier calls (package otelx: OpenTelemetry).
	// Nil, the default, traces nothing and costs nothing.
	Tracer Tracer
}

// Observer is told what the engine does, for metrics. Methods must not block.
type Observer interface {
	// Transitioned is called after a transition of a message of route is durable.
	Transitioned(route string, from, to Status)
	// Delivered is called when a message reaches DELIVERY_SUCCESSFUL, with the
	// time since it was created.
	Delivered(route string, latency time.Duration)
	// Problem counts something that went wrong, by kind (store_error,
	// stale_completion, event_retry, event_dead, carrier_error).
	Problem(kind string)
	// Throttled is called when the engine holds a message of route back
	// for reason: "backpressure" (the carrier asked to wait),
	// "circuit_open" (its lane's circuit opened) or a carrier's wait
	// (WaitReasons: path_requested). lanePaused tells whether
	// the message's lane pauses for it too.
	Throttled(route, reason string, lanePaused bool)
	// Inbound counts an event a route's network sent back, by its type or
	// kind and what became of it: stored, ignored (nothing to act on),
	// applied, stale (a repeat, or its message moved on),
	// unmatched (no message has its carrier id), unpaired (an ack without
	// its uplink in time), uplink (sent to the subscribers).
	Inbound(route, kind, result string)
	// Refused counts an event posted to route that was refused before it
	// reached the inbox, by reason (RefusedUnauthorized,
	// RefusedUnknownRoute, RefusedInvalid, RefusedTooLarge); route is ""
	// for a route that is not configured.
	Refused(route, reason string)
}

type nopObserver struct{}

func (nopObserver) Transitioned(string, Status, Status) {}
func (nopObserver) Delivered(string, time.Duration)     {}
func (nopObserver) Problem(string)                      {}
func (nopObserver) Throttled(string, string, bool)      {}
func (nopObserver) Inbound(string, string, string)      {}
func (nopObserver) Refused(string, string)              {}

// route is a configured Route with what the engine derives from it.
type route struct {
	Route
	classifier *ErrorClassifier
}

// Engine drives messages through their lifecycle: it stores what Send
// receives, dispatches due messages to their carriers, reaps overdue stages,
// retries with backoff, delivers outcome events and prunes old messages.
type Engine struct {
	cfg   Config
	store Store
	// full remembers that the store refused a write for want of room.
	full fullWatch
	// waiting is true while Start waits for the store to answer.
	waiting     atomic.Bool
	clock       clock.Clock
	log         *slog.Logger
	obs         Observer
	routes      map[string]*route
	prefixed    []*route // the prefix routes (Route.Prefix), longest name first
	subscribers []Subscriber
	ids         idGenerator
	// acceptTimeouts maps each route to its SENT_TO_NS deadline, for Claim;
	// defaultAccept is the deadline of the others: the longest of the
	// prefix routes', or the channel profile's when there are none.
	acceptTimeouts map[string]time.Duration
	defaultAccept  time.Duration
	// admission holds the gated routes' admission, for Store.SetAdmission;
	// timed is whether any of them limits its lanes over time (Timed).
	admission    map[string]Admission
	timed        bool
	node         string         // names this engine in its claims (Claim.Node)
	admissionSet bool           // the store has it; guarded by startMu
	tallies      *tallies       // what this process counted, by tenant (Stats, Activity)
	rooms        roomCache      // the rooms published to, with their subscriptions
	eventData    eventDataCache // the data of room events, for their deliveries (eventdata.go)
	refusals     refusals       // the refused carrier events owed to the log (refused.go)
	holds        holds          // the orphaned routes and the operator's pauses (holds.go)

	slots        chan struct{}         // one token per carrier call in flight
	pending      chan struct{}         // one token per claimed message not yet recorded
	prefetched   []*Message            // claimed, waiting for a send slot; guarded by dispatchMu
	pace         pace                  // how far to claim ahead; guarded by dispatchMu
	openCircuits map[LaneRef]time.Time // lanes this node saw open, until when; guarded by dispatchMu
	// laneCalls counts the carrier calls in flight on each lane of a route
	// with Admission.ClaimAhead, which this node keeps to the lane's
	// Concurrency; guarded by dispatchMu.
	laneCalls map[LaneRef]int
	// laneAnswered counts, on the same lanes, the calls that have ended
	// and whose answers are not recorded yet (Claim.KeptSent); guarded by
	// dispatchMu.
	laneAnswered map[LaneRef]int
	// laneKept counts the prefetched messages that the last look at the
	// buffer left waiting for a call of their lane: claims do not count
	// them as claimed ahead; guarded by dispatchMu.
	laneKept  int
	claimingN int // messages asked of the claims running; guarded by dispatchMu
	// claimingTimed is the gated messages the claims running may take
	// when a route is limited over time (gatedLimit); guarded by dispatchMu.
	claimingTimed  int
	dispatching    bool          // the dispatch loop runs; guarded by dispatchMu
	wake           chan struct{} // nudges the dispatcher
	retryPending   chan struct{} // tells the dispatcher to release due retries
	eventPending   chan struct{} // nudges the outbox
	inboundPending chan struct{} // nudges the inbox loop
	pollPending    chan struct{} // nudges the poll loop: a poll ended
	pullRoutes     []*route      // the routes whose carriers poll their tasks (Poller)
	polls          pollGate      // the polls running
	dispatchMu     sync.Mutex    // one dispatch round at a time
	sends          sync.WaitGroup

	// busy counts what may still act without a call from outside or a
	// move of the clock: the loops not parked (see park), the goroutines
	// of sends (their answers and lane events included), claims and
	// hand-backs, and the wake-ups given to parked
	// loops but not yet taken (nudges, alarms that went off). A wake-up
	// taken hands its count to the loop that takes it. Idle reports it.
	busy atomic.Int64

	// sendCtx outlives Stop's first phase so that sends in flight can finish.
	sendCtx    context.Context
	cancelSend context.CancelFunc

	startMu sync.Mutex
	cancel  context.CancelFunc
	loops   sync.WaitGroup
}

// New checks cfg and returns an Engine. Call Start to run its loops.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil {
		return nil, errors.New("herald: Config.Store is required")
	}
	if len(cfg.Routes) == 0 {
		return nil, errors.New("herald: at least one route is required")
	}
	setDefaults(&cfg)
	e := &Engine{
		cfg: cfg, store: cfg.Store, clock: cfg.Clock, log: cfg.Logger, obs: cfg.Observer, tallies: newTallies(cfg.Clock),
		routes:         make(map[string]*route, len(cfg.Routes)),
		acceptTimeouts: make(map[string]time.Duration, len(cfg.Routes)),
		defaultAccept:  Profiles[ProfileChannel].Timeouts.Accept,
		admission:      make(map[string]Admission),
		openCircuits:   make(map[LaneRef]time.Time),
		laneCalls:      make(map[LaneRef]int),
		laneAnswered:   make(map[LaneRef]int),
		subscribers:    cfg.Subscribers,
		slots:          make(chan struct{}, cfg.Concurrency),
		pending:        make(chan struct{}, 2*cfg.Concurrency+4*cfg.ClaimBatch),
		wake:           make(chan struct{}, 1),
		retryPending:   make(chan struct{}, 1),
		eventPending:   make(chan struct{}, 1),
		inboundPending: make(chan struct{}, 1),
		pollPending:    make(chan struct{}, 1),
	}
	e.store = watchedStore{Store: cfg.Store, e: e}
	for _, r := range cfg.Routes {
		if r.Name == "" {
			return nil, errors.New("herald: a route has no name")
		}
		if _, dup := e.routes[r.Name]; dup || slices.ContainsFunc(e.prefixed, func(p *route) bool { return p.Name == r.Name }) {
			return nil, fmt.Errorf("herald: route %q is configured twice", r.Name)
		}
		if r.Carrier == nil {
			return nil, fmt.Errorf("herald: route %q has no carrier", r.Name)
		}
		if err := r.Policy.Validate(); err != nil {
			return nil, fmt.Errorf("herald: route %q: %w", r.Name, err)
		}
		patterns := r.PermanentErrors
		if patterns == nil {
			patterns = DefaultPermanentPatterns
		}
		c, err := NewErrorClassifier(patterns)
		if err != nil {
			return nil, fmt.Errorf("herald: route %q: %w", r.Name, err)
		}
		if r.Prefix {
			if r.Policy.Admission.Gated() {
				return nil, fmt.Errorf("herald: route %q: a prefix route cannot be gated", r.Name)
			}
			e.prefixed = append(e.prefixed, &route{Route: r, classifier: c})
			continue
		}
		e.routes[r.Name] = &route{Route: r, classifier: c}
		if _, ok := r.Carrier.(Poller); ok && r.Carrier.Path() == PathPull {
			e.pullRoutes = append(e.pullRoutes, e.routes[r.Name])
		}
		e.acceptTimeouts[r.Name] = r.Policy.Timeouts.Accept
		if a := r.Policy.Admission; a.Gated() {
			if a.Concurrency > 0 && !a.Timed() && r.Carrier.Path() == PathDirect {
				// As far ahead as the claims of one node go (pace's most).
				a.ClaimAhead = a.Concurrency + maxClaims*cfg.ClaimBatch
			}
			e.admission[r.Name] = a
			e.timed = e.timed || a.Timed()
		}
	}
	slices.SortFunc(e.prefixed, func(a, b *route) int { return len(b.Name) - len(a.Name) })
	for i, r := range e.prefixed {
		if i == 0 || r.Policy.Timeouts.Accept > e.defaultAccept {
			e.defaultAccept = r.Policy.Timeouts.Accept
		}
		for name := range e.routes {
			if strings.HasPrefix(name, r.Name) {
				return nil, fmt.Errorf("herald: route %q is under the prefix route %q", name, r.Name)
			}
		}
	}
	for i, s := range e.subscribers {
		if s.Name == "" || s.Sink == nil {
			return nil, fmt.Errorf("herald: subscriber %d needs a name and a sink", i)
		}
		if len(s.Types) == 0 {
			e.subscribers[i].Types = DefaultEventTypes()
		}
		if s.MaxAttempts < 1 {
			e.subscribers[i].MaxAttempts = DefaultSubscriberAttempts
		}
		if s.Retry.Kind == "" {
			e.subscribers[i].Retry = DefaultSubscriberRetry
		} else if err := s.Retry.Validate(); err != nil {
			return nil, fmt.Errorf("herald: subscriber %s: %w", s.Name, err)
		}
	}
	e.node = e.ids.next(e.clock.Now())
	e.sendCtx, e.cancelSend = context.WithCancel(context.Background())
	return e, nil
}

func setDefaults(c *Config) {
	if c.Clock == nil {
		c.Clock = clock.System()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 64
	}
	if c.ClaimBatch <= 0 {
		c.ClaimBatch = 256
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 250 * time.Millisecond
	}
	if c.ReapInterval <= 0 {
		c.ReapInterval = 2 * time.Second
	}
	if c.Retention <= 0 {
		c.Retention = 7 * 24 * time.Hour
	}
	if c.PruneInterval <= 0 {
		c.PruneInterval = 5 * time.Minute
	}
	if c.DrainBudget <= 0 {
		c.DrainBudget = 60 * time.Second
	}
	if c.Health == nil {
		h := DefaultHealthThresholds
		c.Health = &h
	}
	if c.Random == nil {
		c.Random = rand.Float64
	}
}

// Start gives the store the gated routes' admission, runs the startup
// drain, then the engine's loops, until Stop. A store that cannot be
// reached (ErrStoreUnavailable) does not stop it: Start returns nil and
// does that work in the background once the store answers, trying again
// with backoff (1 s doubling, up to 30 s); until then Ready fails and
// sends are refused with ErrStoreUnavailable.
func (e *Engine) Start(ctx context.Context) error {
	e.startMu.Lock()
	defer e.startMu.Unlock()
	if e.cancel != nil {
		return errors.New("herald: engine already started")
	}
	err := e.startUp(ctx)
	loopCtx, cancel := context.WithCancel(context.Background())
	switch {
	case errors.Is(err, ErrStoreUnavailable):
		e.cancel = cancel
		e.waiting.Store(true)
		e.problem("store_unavailable_at_start", "the store is unavailable at start: herald answers 503 and starts when it answers", "err", err)
		e.loops.Add(1)
		go func() {
			defer e.loops.Done()
			e.startWhenStored(loopCtx)
		}()
		return nil
	case err != nil:
		cancel()
		return err
	}
	e.cancel = cancel
	e.runLoops(ctx, loopCtx)
	return nil
}

// startUp gives the store the admission and runs the startup drain.
func (e *Engine) startUp(ctx context.Context) error {
	if err := e.setAdmission(ctx); err != nil {
		return err
	}
	if err := e.Drain(ctx); err != nil {
		return fmt.Errorf("startup drain: %w", err)
	}
	return nil
}

// startWhenStored tries startUp again, with backoff, until it succeeds
// (then runs the loops) or ctx ends (Stop).
func (e *Engine) startWhenStored(ctx context.Context) {
	wait := time.Second
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		e.startMu.Lock()
		err := e.startUp(ctx)
		if err == nil && ctx.Err() == nil {
			e.runLoops(ctx, ctx)
			e.waiting.Store(false)
			e.startMu.Unlock()
			e.log.Info("the store answers: herald started")
			return
		}
		e.startMu.Unlock()
		if err != nil && !errors.Is(err, ErrStoreUnavailable) {
			e.log.Error("starting when the store answers", "err", err)
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// runLoops starts the engine's loops on loopCtx. The caller holds startMu.
func (e *Engine) runLoops(ctx, loopCtx context.Context) {
	loops := []func(context.Context){e.dispatchLoop, e.reapLoop, e.pollLoop, e.outboxLoop, e.pruneLoop, e.inboxLoop}
	if e.keepsLanes() {
		e.beat(ctx) // before the first claim takes a lane
		loops = append(loops, e.heartbeatLoop)
	}
	for _, loop := range loops {
		e.loops.Add(1)
		e.busy.Add(1)
		go func() {
			defer e.loops.Done()
			defer e.busy.Add(-1)
			loop(loopCtx)
		}()
	}
	e.listen(loopCtx)
}

// Idle reports whether the engine runs and has nothing under way: every
// loop is parked until its next turn on the Config.Clock or a nudge, and
// no send, claim or hand-back is in flight. On a fake clock the engine
// then does nothing more until the clock moves or it is called (Send,
// Replay, ...): tests wait for Idle before they check that something did
// not happen.
func (e *Engine) Idle() bool {
	e.startMu.Lock()
	running := e.cancel != nil
	e.startMu.Unlock()
	return running && e.busy.Load() == 0
}

// Stop stops the loops, hands back the messages claimed but not sent
// (TO_RETRY, due at once, attempt undone), and waits for the sends in
// flight and those hand-backs to finish, or for ctx to end, whichever is
// first. Messages whose send was cut short stay in flight and are retried
// after their deadline.
func (e *Engine) Stop(ctx context.Context) error {
	e.startMu.Lock()
	cancel := e.cancel
	e.cancel = nil
	e.startMu.Unlock()
	if cancel != nil {
		cancel()
		e.loops.Wait()
		e.handBackPrefetched()
	}
	done := make(chan struct{})
	go func() {
		e.sends.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		e.cancelSend()
		<-done
		return ctx.Err()
	}
}

// Prepare gives the store the gated routes' admission, as Start does
// first, without starting the engine: the messages sent before Start are
// then stored as a running engine's are (a benchmark's preload). It does
// nothing once the store has it.
func (e *Engine) Prepare(ctx context.Context) error {
	e.startMu.Lock()
	defer e.startMu.Unlock()
	return e.setAdmission(ctx)
}

// setAdmission gives the store the gated routes' admission, once. The
// caller holds startMu.
func (e *Engine) setAdmission(ctx context.Context) error {
	if e.admissionSet {
		return nil
	}
	if err := e.store.SetAdmission(ctx, e.admission); err != nil {
		return fmt.Errorf("set the lanes' admission: %w", err)
	}
	e.admissionSet = true
	return nil
}

// Route returns the configured route named name.
func (e *Engine) Route(name string) (Route, bool) {
	r, ok := e.routes[name]
	if !ok {
		return Route{}, false
	}
	return r.Route, true
}

// route returns the route that serves the messages of route name: the
// route of that name, else the longest prefix route whose name starts it.
func (e *Engine) route(name string) (*route, bool) {
	if r, ok := e.routes[name]; ok {
		return r, true
	}
	for _, r := range e.prefixed {
		if strings.HasPrefix(name, r.Name) {
			return r, true
		}
	}
	return nil, false
}

// acceptTimeout returns the SENT_TO_NS deadline of the messages of route name.
func (e *Engine) acceptTimeout(name string) time.Duration {
	if d, ok := e.acceptTimeouts[name]; ok {
		return d
	}
	return e.defaultAccept
}

// notifyFor names the subscribers of transitions to s.
func (e *Engine) notifyFor(s Status) []string {
	var names []string
	for _, sub := range e.subscribers {
		for _, t := range sub.Types {
			if t == s {
				names = append(names, sub.Name)
				break
			}
		}
	}
	return names
}

// transition applies t and reports it; a conflict is returned as is.
func (e *Engine) transition(ctx context.Context, m *Message, t Transition) error {
	t.ID = m.ID
	if t.At.IsZero() {
		t.At = e.clock.Now()
	}
	if t.To != t.From {
		t.Notify = e.notifyFor(t.To)
	}
	if err := e.store.Transition(ctx, t); err != nil {
		return err
	}
	if t.To == t.From {
		return nil
	}
	e.transitioned(m, t.From, t.To)
	if t.To == StatusDeliverySuccessful {
		lat := t.At.Sub(m.CreatedAt)
		e.obs.Delivered(m.Route, lat)
		e.tallies.delivered(m.Tenant, lat)
	}
	if len(t.Notify) > 0 {
		e.nudge(e.eventPending)
	}
	return nil
}

// nudge signals ch without blocking. The signal counts as busy until a
// loop takes it.
func (e *Engine) nudge(ch chan struct{}) {
	e.busy.Add(1)
	select {
	case ch <- struct{}{}:
	default:
		e.busy.Add(-1) // one is already waiting
	}
}

// problem logs and counts something that went wrong.
func (e *Engine) problem(kind, msg string, args ...any) {
	e.obs.Problem(kind)
	e.log.Warn(msg, append(args, slog.String("kind", kind))...)
}

// spawn runs f in a goroutine that Stop waits for and that counts as busy.
func (e *Engine) spawn(f func()) {
	e.sends.Add(1)
	e.busy.Add(1)
	go func() {
		defer e.sends.Done()
		defer e.busy.Add(-1)
		f()
	}()
}

// alarm wakes a parked goroutine once a duration has passed on the
// engine's clock: its channel receives then, and the wake-up counts as busy
// until taken.
type alarm struct {
	c     chan struct{}
	timer clock.Timer
	busy  *atomic.Int64
}

// newAlarm returns an alarm that goes off after d.
func (e *Engine) newAlarm(d time.Duration) *alarm {
	a := &alarm{c: make(chan struct{}, 1), busy: &e.busy}
	a.timer = e.clock.AfterFunc(d, func() {
		a.busy.Add(1)
		a.c <- struct{}{}
	})
	return a
}

// stop cancels an alarm whose channel was not received from; if it went
// off meanwhile, its wake-up is taken.
func (a *alarm) stop() {
	if !a.timer.Stop() {
		<-a.c
		a.busy.Add(-1)
	}
}

// park marks the calling goroutine, which counts as busy, as waiting. Call
// it right before a select whose every case but ctx.Done receives a
// counted wake-up (a nudge, an alarm, a claim's result): the goroutine
// then holds the wake-up's count.
func (e *Engine) park() { e.busy.Add(-1) }

// unpark counts a parked goroutine as busy again, after a select that
// ctx.Done ended.
func (e *Engine) unpark() { e.busy.Add(1) }

// sleep waits d on the engine's clock, parked, or until ctx ends; it
// reports whether ctx is still alive. The caller must count as busy.
func (e *Engine) sleep(ctx context.Context, d time.Duration) bool {
	a := e.newAlarm(d)
	e.park()
	select {
	case <-ctx.Done():
		e.unpark()
		a.stop()
		return false
	case <-a.c:
		return true
	}
}
