// Package calin simulates the Calin smart-meter cloud API, V1 or V2, for
// tests and demos: a carrier creates a remote task for a meter (a reading, a
// relay switch, a setting, a token delivery), gets a task id back, and polls
// the task until it is done.
//
// The wire format is taken from the public client code in
// github.com/nxtgrid/nxt-device-messaging (commit a72fb9d), not from herald:
//
//   - src/plugins/calin-api-v1/{lib/repo.ts,outgoing.ts,incoming.ts,token.ts}
//   - src/plugins/calin-api-v2/{lib/repo.ts,outgoing.ts,incoming.ts,token.ts}
//   - test/unit/plugins/calin-api-v{1,2}-{repo,outgoing,incoming}.spec.ts
//
// # V1
//
// Every call is a POST of a JSON object with the company's credentials in the
// body (CompanyName, UserName, Password) and answers HTTP 200 with
// {"ResultCode","Reason","Result"}; "00"/"OK" is the happy path.
//
//	POST /COMM_RemoteReading  {…, "MeterNo", "DataItem"}          → Result {TaskNo, Status: null, DataItem, Data: ""}
//	POST /COMM_RemoteControl  {…, "MeterNo", "DataItem"}          ("Switch On" / "Switch Off")
//	POST /COMM_RemoteWrite    {…, "MeterNo", "DataItem", "Data"}  ("Date", Data "yymmddww")
//	POST /COMM_RemoteToken    {…, "MeterNo", "Token"}
//	POST /COMM_Remote{Reading,Control,Write,Token}Task {…, "TaskNo"}
//
// A polled task answers Result.Status null while it runs (the client also
// takes "unknown" as running; the simulator never sends it), "True" when it
// succeeded (Data holds the reading, e.g. "108.8,ON" for "Current Credit
// Register", "230.1 V" for "Voltage"), "False" when it failed. A rejected
// token answers ResultCode "99", Reason "other error" and no Result, on the
// poll — or on the create when Config.TokenRejectAtCreate is set, which is
// the client's "immediately rejected" path. A server error answers a non-2xx
// status with {"Message": "..."}, the ASP.NET shape the client reads.
//
// # V2
//
//	POST /API/User/Login {"userId","password","company"} → {"code":0,"reason":"success","result":{"token":"<JWT>"}}
//	POST /API/RemoteMeterTask/Create{Reading,Control,Setting,Token}Task
//	     [{"meterId","protocolId","data"?,"customerId","company"}] → {"code":0,"reason":"success","result":[{"id":"1001"}]}
//	POST /API/RemoteMeterTask/Get{Reading,Control,Setting,Token}Task
//	     {"id":1001,"lang":"en","company"} → {"code":0,"reason":"success","result":{"data":[{"name","status","data"}]}}
//
// Every call but the login needs "Authorization: Bearer <token>"; the token
// is a JWT whose "exp" claim (seconds) is the login time plus
// Config.TokenTTL, which is what the client reads to refresh it. A call with
// a missing, unknown or expired token answers HTTP 401 (empty body,
// WWW-Authenticate: Bearer error="invalid_token"); the client then logs in
// again and repeats the call. A task's status is 0 processing, 1 success, 2
// failed, 3 token rejected; its name follows the protocol id ("Current
// Credit Balance" for 39, "Relay On/Off" for 20000/20001, "Token" for 30000,
// …). The create body is an array: each element becomes a task, in order.
//
// # Simulated, chosen and simplified
//
// A task's outcome (success, failure at Config.FailRate, token rejection at
// Config.TokenRejectRate for token tasks) is drawn from a seeded source when
// it is created, and it finishes Config.Latency after that; nothing runs in
// the background. A token already accepted by a meter is rejected when it is
// sent to that meter again (STS tokens are single-use; the client's reason is
// "possibly already delivered"), unless Config.AcceptReusedTokens.
// Config.SlowCreate delays a create's answer, not the task: the task exists,
// and its latency runs, from the moment the call arrives, which is how a
// client that gives up on a slow create and retries makes the task twice.
//
// The client code does not show what the vendor answers for wrong
// credentials, an unknown meter, an unknown task id or a body missing a
// field, only that anything but ResultCode "00"/"99" (V1) or code 0 (V2) is
// not a success and that V1's Reason / V2's reason is surfaced. The codes
// here are the simulator's choice: V1ResultAuthFailed, V1ResultMeterUnknown,
// V1ResultTaskUnknown, V1ResultBadRequest and the matching V2Code* values,
// each with HTTP 200 and no Result (V1, as in the client's fixtures) or
// "result": null (V2); a wrong V2 login answers code V2CodeAuthFailed and no
// token. A task polled through another family's endpoint (a reading task on
// …ControlTask) is unknown there, and so is a task the API lost
// (Config.LoseRate, Forget): the reference client fails the message of a
// poll answered so, with the vendor's reason. Also chosen: task ids are decimal strings
// from "1001" (V2's client types the id as a string and polls with
// Number(id)); any DataItem and protocolId is accepted; the JWT is HS256
// with sub, company, iat, exp and jti claims (the client reads only exp);
// a malformed body answers 400 ({"Message"} on V1, a problem+json on V2),
// a GET 405, an unknown path 404; paths match without regard to case, as
// ASP.NET (whose {"Message"} error shape V1's client reads) routes them.
// Config.SlowCreate delays every answer of a create endpoint, errors and
// 401s included; Config.SlowPoll every answer of a poll endpoint, the
// same way. The reading values are fixed plausible numbers in the forms
// the client parses (the credit's relay flag follows the meter's last
// successful control task). Token minting (POS_Purchase, Maintenance_*,
// /API/Token/…/Generate) is not simulated.
//
// GET /_sim/tasks and GET /_sim/calls answer the records as JSON, POST
// /_sim/expire-tokens expires every V2 bearer token and POST
// /_sim/forget?task=ID loses a task, for the command line; tests call
// Tasks, Calls, ExpireTokens and Forget.
package calin

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// API is the vendor API version a Sim serves.
type API string

// The API versions.
const (
	V1 API = "v1"
	V2 API = "v2"
)

// Kind is a task's family, which picks its create and poll endpoints.
type Kind string

// The task families. KindWrite is V1's COMM_RemoteWrite and V2's
// CreateSettingTask.
const (
	KindReading Kind = "reading"
	KindControl Kind = "control"
	KindWrite   Kind = "write"
	KindToken   Kind = "token"
)

// Status is where a task is.
type Status string

// The task statuses: pending until the task's latency has passed, then its
// outcome.
const (
	StatusPending       Status = "pending"
	StatusSuccess       Status = "success"
	StatusFailed        Status = "failed"
	StatusTokenRejected Status = "token_rejected"
)

// Defaults for the zero Config's credentials (those of the client's tests).
const (
	DefaultCompany  = "Acme"
	DefaultUser     = "admin"
	DefaultPassword = "secret"
	// DefaultTokenTTL is the V2 bearer token's lifetime when Config.TokenTTL
	// is zero.
	DefaultTokenTTL = time.Hour
)

// maxBody bounds the request bodies the simulator reads.
const maxBody = 1 << 20

// StatusClientClosed is recorded for a call whose client went away before
// it was answered (during Config.SlowCreate); its task exists all the same.
const StatusClientClosed = 499

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// systemClock reads the operating system's clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Config sets what a Sim serves and how its tasks end.
type Config struct {
	// API is V1 or V2; empty means V1.
	API API
	// Company, User and Password are the accepted credentials: V1's
	// CompanyName, UserName, Password in every body; V2's company, userId,
	// password at login (and company in every body). Empty means the
	// Default* values.
	Company  string
	User     string
	Password string
	// CustomerID, when set, is the only customerId V2 creates accept.
	CustomerID string
	// Meters, when set, lists the known meters; a task for another meter is
	// refused. Empty accepts any meter.
	Meters []string

	// Latency is how long a task runs after it is created.
	Latency time.Duration
	// FailRate is the share of tasks that fail, 0..1.
	FailRate float64
	// TokenRejectRate is the share of token tasks whose token the meter
	// rejects, 0..1 (drawn before FailRate).
	TokenRejectRate float64
	// LoseRate is the share of tasks the API loses once it has created
	// them, 0..1: their polls answer that the task does not exist, as
	// for an id it never gave (see Forget).
	LoseRate float64
	// TokenRejectAtCreate (V1) answers a rejected token on the create call
	// (ResultCode "99", no task) instead of on the poll.
	TokenRejectAtCreate bool
	// AcceptReusedTokens lets a meter accept a token it has already
	// accepted; by default such a task ends token-rejected.
	AcceptReusedTokens bool
	// TokenTTL is the lifetime of a V2 bearer token; 0 means DefaultTokenTTL.
	TokenTTL time.Duration
	// SlowCreate delays every create call's answer by this much wall time;
	// the task exists, and its latency runs, from the moment the call
	// arrives.
	SlowCreate time.Duration
	// SlowPoll delays every poll call's answer by this much wall time: a
	// vendor that answers a poll in 200 ms.
	SlowPoll time.Duration
	// Seed seeds the outcome draws.
	Seed int64

	// Clock is the time source of task latencies and token expiry (a
	// clock.Clock or *clock.Fake serves); nil means the system clock.
	Clock Clock
	// OnCreate, when set, is called with each task once it exists, before
	// its create call answers (and before SlowCreate's wait).
	OnCreate func(Task)
}

// Validate reports the first field of c that is out of range.
func (c Config) Validate() error {
	switch c.API {
	case "", V1, V2:
	default:
		return fmt.Errorf("calin: API %q: want %q or %q", c.API, V1, V2)
	}
	if c.FailRate < 0 || c.FailRate > 1 {
		return fmt.Errorf("calin: FailRate %v: want 0..1", c.FailRate)
	}
	if c.TokenRejectRate < 0 || c.TokenRejectRate > 1 {
		return fmt.Errorf("calin: TokenRejectRate %v: want 0..1", c.TokenRejectRate)
	}
	if c.LoseRate < 0 || c.LoseRate > 1 {
		return fmt.Errorf("calin: LoseRate %v: want 0..1", c.LoseRate)
	}
	if c.Latency < 0 {
		return fmt.Errorf("calin: Latency %v: want ≥ 0", c.Latency)
	}
	if c.TokenTTL < 0 {
		return fmt.Errorf("calin: TokenTTL %v: want ≥ 0", c.TokenTTL)
	}
	if c.SlowCreate < 0 {
		return fmt.Errorf("calin: SlowCreate %v: want ≥ 0", c.SlowCreate)
	}
	if c.SlowPoll < 0 {
		return fmt.Errorf("calin: SlowPoll %v: want ≥ 0", c.SlowPoll)
	}
	return nil
}

// Task is a created task as the simulator sees it.
type Task struct {
	// ID is V1's TaskNo or V2's id.
	ID   string
	API  API
	Kind Kind
	// Meter is V1's MeterNo or V2's meterId.
	Meter string
	// Command is V1's DataItem ("Token" for a token task) or V2's
	// protocolId in decimal.
	Command string
	// ProtocolID is V2's protocolId (0 on V1).
	ProtocolID int
	// Data is V1's Data (writes) or V2's data (settings, tokens).
	Data string
	// Token is the delivered token of a token task.
	Token string
	// Created is when the task was created, Done when it finishes (by the
	// Config's clock).
	Created time.Time
	Done    time.Time
	// Outcome is how the task ends; Status is where it is now.
	Outcome Status
	Status  Status
	// Polls counts the polls of the task.
	Polls int
	// Lost is set once the API no longer has the task (Config.LoseRate,
	// Forget): its polls answer that it does not exist.
	Lost bool
}

// Call is one HTTP request the simulator answered.
type Call struct {
	At     time.Time // by the Config's clock
	Method string
	Path   string
	// Status is the HTTP status; Code the vendor's code (V1 ResultCode, V2
	// code in decimal), empty when the answer had none.
	Status int
	Code   string
	// Meter and TaskIDs are those the call named or created.
	Meter   string
	TaskIDs []string
}

// Sim is an http.Handler serving one Calin API version. It is safe for
// concurrent use.
type Sim struct {
	cfg    Config
	clk    Clock
	meters map[string]bool // nil: any
	routes map[string]route

	mu       sync.Mutex
	rng      *rand.Rand
	nextID   int
	tasks    map[string]*Task
	order    []string
	accepted map[string]bool // meter + "\x00" + token: accepted tokens
	sessions map[string]time.Time
	nextJTI  int
	secret   []byte
	calls    []Call
}

var _ http.Handler = (*Sim)(nil)

// route is a vendor endpoint: its handler and, for task endpoints, its
// family.
type route struct {
	kind    Kind
	handler func(s *Sim, w http.ResponseWriter, r *http.Request, kind Kind, c *Call)
}

// New returns a simulator configured by cfg. It panics when cfg.Validate
// fails.
func New(cfg Config) *Sim {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if cfg.API == "" {
		cfg.API = V1
	}
	if cfg.Company == "" {
		cfg.Company = DefaultCompany
	}
	if cfg.User == "" {
		cfg.User = DefaultUser
	}
	if cfg.Password == "" {
		cfg.Password = DefaultPassword
	}
	if cfg.TokenTTL == 0 {
		cfg.TokenTTL = DefaultTokenTTL
	}
	s := &Sim{
		cfg:      cfg,
		clk:      cfg.Clock,
		rng:      rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(cfg.Seed)^0x9e3779b97f4a7c15)),
		nextID:   1000,
		tasks:    map[string]*Task{},
		accepted: map[string]bool{},
		sessions: map[string]time.Time{},
		secret:   fmt.Appendf(nil, "calin-sim-%d", cfg.Seed),
	}
	if s.clk == nil {
		s.clk = systemClock{}
	}
	if len(cfg.Meters) > 0 {
		s.meters = map[string]bool{}
		for _, m := range cfg.Meters {
			s.meters[m] = true
		}
	}
	if cfg.API == V1 {
		s.routes = v1Routes()
	} else {
		s.routes = v2Routes()
	}
	return s
}

// API returns the version s serves.
func (s *Sim) API() API { return s.cfg.API }

// ServeHTTP answers a vendor call, a GET of /_sim/tasks or /_sim/calls, or
// a POST of /_sim/expire-tokens (ExpireTokens) or /_sim/forget?task=ID
// (Forget; 404 for a task it never created).
func (s *Sim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_sim/") {
		get := r.Method == http.MethodGet || r.Method == http.MethodHead
		switch {
		case get && r.URL.Path == "/_sim/tasks":
			writeJSON(w, http.StatusOK, s.Tasks())
		case get && r.URL.Path == "/_sim/calls":
			writeJSON(w, http.StatusOK, s.Calls())
		case r.Method == http.MethodPost && r.URL.Path == "/_sim/expire-tokens":
			s.ExpireTokens()
			w.WriteHeader(http.StatusNoContent)
		case r.Method == http.MethodPost && r.URL.Path == "/_sim/forget":
			if !s.Forget(r.URL.Query().Get("task")) {
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
		return
	}
	c := Call{At: s.clk.Now(), Method: r.Method, Path: r.URL.Path}
	rw := &statusWriter{ResponseWriter: w}
	defer func() {
		c.Status = rw.status
		if c.Status == 0 {
			c.Status = StatusClientClosed
		}
		s.mu.Lock()
		s.calls = append(s.calls, c)
		s.mu.Unlock()
	}()
	rt, ok := s.routes[strings.ToLower(r.URL.Path)]
	if !ok {
		s.notFound(rw, r)
		return
	}
	if r.Method != http.MethodPost {
		s.methodNotAllowed(rw, r)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSON(ct) {
		s.unsupportedMedia(rw, ct)
		return
	}
	r.Body = http.MaxBytesReader(rw, r.Body, maxBody)
	rt.handler(s, rw, r, rt.kind, &c)
}

// isJSON reports whether a Content-Type is JSON.
func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// Tasks returns every task created so far, in creation order, with its
// status now.
func (s *Sim) Tasks() []Task {
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Task, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.snapshot(s.tasks[id], now))
	}
	return out
}

// Task returns the task with id and its status now.
func (s *Sim) Task(id string) (Task, bool) {
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return Task{}, false
	}
	return s.snapshot(t, now), true
}

// MeterTasks returns the tasks of meter, in creation order; with a command
// (V1 DataItem, V2 protocolId in decimal), only those of that command.
func (s *Sim) MeterTasks(meter, command string) []Task {
	var out []Task
	for _, t := range s.Tasks() {
		if t.Meter == meter && (command == "" || t.Command == command) {
			out = append(out, t)
		}
	}
	return out
}

// Calls returns every vendor call answered so far, in the order they ended.
func (s *Sim) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.calls)
	for i := range out {
		out[i].TaskIDs = slices.Clone(out[i].TaskIDs)
	}
	return out
}

// ExpireTokens makes every V2 bearer token issued so far expired, so that
// the next call with one answers 401.
func (s *Sim) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok := range s.sessions {
		s.sessions[tok] = time.Time{}
	}
}

// Forget makes the API lose task id, as it may once a task is old: its
// polls answer that it does not exist. It reports whether the simulator
// created such a task.
func (s *Sim) Forget(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if ok {
		t.Lost = true
	}
	return ok
}

// snapshot copies t with its status at now. s.mu is held.
func (s *Sim) snapshot(t *Task, now time.Time) Task {
	c := *t
	c.Status = StatusPending
	if !now.Before(t.Done) {
		c.Status = t.Outcome
	}
	return c
}

// newTask is a task to create: what the call asked for.
type newTask struct {
	kind       Kind
	meter      string
	command    string
	protocolID int
	data       string
	token      string
}

// errTokenRejectedAtCreate is returned by create when a token is rejected
// on the create call (Config.TokenRejectAtCreate).
var errTokenRejectedAtCreate = errors.New("token rejected")

// create draws the outcome of each of nts and stores them as tasks,
// returning them. With Config.TokenRejectAtCreate, a rejected token task is
// not stored and create returns errTokenRejectedAtCreate (V1 creates one
// task per call).
func (s *Sim) create(nts []newTask) ([]Task, error) {
	now := s.clk.Now()
	s.mu.Lock()
	out := make([]Task, 0, len(nts))
	for _, nt := range nts {
		outcome := s.drawLocked(nt, now)
		if outcome == StatusTokenRejected && s.cfg.TokenRejectAtCreate && s.cfg.API == V1 {
			s.mu.Unlock()
			return nil, errTokenRejectedAtCreate
		}
		s.nextID++
		t := &Task{
			ID:         fmt.Sprint(s.nextID),
			API:        s.cfg.API,
			Kind:       nt.kind,
			Meter:      nt.meter,
			Command:    nt.command,
			ProtocolID: nt.protocolID,
			Data:       nt.data,
			Token:      nt.token,
			Created:    now,
			Done:       now.Add(s.cfg.Latency),
			Outcome:    outcome,
			Lost:       s.cfg.LoseRate > 0 && s.rng.Float64() < s.cfg.LoseRate,
		}
		if nt.kind == KindToken && outcome == StatusSuccess {
			s.accepted[nt.meter+"\x00"+nt.token] = true
		}
		s.tasks[t.ID] = t
		s.order = append(s.order, t.ID)
		out = append(out, s.snapshot(t, now))
	}
	s.mu.Unlock()
	if s.cfg.OnCreate != nil {
		for _, t := range out {
			s.cfg.OnCreate(t)
		}
	}
	return out, nil
}

// drawLocked decides how a new task ends. s.mu is held.
func (s *Sim) drawLocked(nt newTask, now time.Time) Status {
	if nt.kind == KindToken {
		reject := s.cfg.TokenRejectRate > 0 && s.rng.Float64() < s.cfg.TokenRejectRate
		if !s.cfg.AcceptReusedTokens && s.accepted[nt.meter+"\x00"+nt.token] {
			reject = true
		}
		if reject {
			return StatusTokenRejected
		}
	}
	if s.cfg.FailRate > 0 && s.rng.Float64() < s.cfg.FailRate {
		return StatusFailed
	}
	return StatusSuccess
}

// poll finds task id of family kind, counts the poll and returns the task's
// status now; ok is false for an unknown id, a lost task or another
// family's task.
func (s *Sim) poll(id string, kind Kind) (Task, bool) {
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok || t.Kind != kind || t.Lost {
		return Task{}, false
	}
	t.Polls++
	return s.snapshot(t, now), true
}

// knownMeter reports whether meter may be given tasks.
func (s *Sim) knownMeter(meter string) bool {
	return s.meters == nil || s.meters[meter]
}

// relayOn reports whether meter's relay is on at now: off after a
// successful switch-off task, on again after a successful switch-on, on at
// first.
func (s *Sim) relayOn(meter string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	on := true
	for _, id := range s.order {
		t := s.tasks[id]
		if t.Meter != meter || t.Kind != KindControl || t.Outcome != StatusSuccess || now.Before(t.Done) {
			continue
		}
		switch t.Command {
		case "Switch On", "20000":
			on = true
		case "Switch Off", "20001":
			on = false
		}
	}
	return on
}

// waitSlowCreate waits Config.SlowCreate before a create answers; it
// reports false when the client went away first.
func (s *Sim) waitSlowCreate(r *http.Request) bool { return wait(r, s.cfg.SlowCreate) }

// waitSlowPoll waits Config.SlowPoll before a poll is answered; it reports
// false when the client went away first.
func (s *Sim) waitSlowPoll(r *http.Request) bool { return wait(r, s.cfg.SlowPoll) }

// wait waits d of wall time before r is answered; it reports false when
// the client went away first.
func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}
