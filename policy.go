package herald

import (
	"fmt"
	"math"
	"time"
)

// RetryKind names how a RetryPolicy spaces its retries.
type RetryKind string

// The retry kinds.
const (
	// RetryExponential waits Base × Multiplier^(n-1) before retry n, capped at Max,
	// plus a random 0..Jitter share of that delay.
	RetryExponential RetryKind = "exponential"
	// RetrySchedule waits Schedule[n-1] before retry n; the last step repeats.
	RetrySchedule RetryKind = "schedule"
	// RetryConstant waits Base before every retry.
	RetryConstant RetryKind = "constant"
)

// RetryPolicy says how long to wait before each retry.
type RetryPolicy struct {
	Kind       RetryKind
	Base       time.Duration   // first delay (exponential), every delay (constant)
	Multiplier float64         // growth per retry (exponential). Defaults to 2.
	Max        time.Duration   // cap on the delay before jitter (exponential); 0 for none
	Jitter     float64         // 0..0.5: extra random share of the delay
	Schedule   []time.Duration // delays in order (schedule); the last is the cap
}

// Delay returns the wait before retry n (n = 1 for the first retry), given a
// random number rnd in [0, 1) for the jitter.
func (r RetryPolicy) Delay(n int, rnd float64) time.Duration {
	if n < 1 {
		n = 1
	}
	var d time.Duration
	switch r.Kind {
	case RetrySchedule:
		if len(r.Schedule) == 0 {
			return 0
		}
		d = r.Schedule[min(n, len(r.Schedule))-1]
	case RetryConstant:
		d = r.Base
	default:
		mult := r.Multiplier
		if mult == 0 {
			mult = 2
		}
		f := float64(r.Base) * math.Pow(mult, float64(n-1))
		if r.Max > 0 && f > float64(r.Max) {
			f = float64(r.Max)
		}
		if f > float64(math.MaxInt64/2) {
			f = float64(math.MaxInt64 / 2)
		}
		d = time.Duration(f)
	}
	if r.Jitter > 0 {
		d += time.Duration(float64(d) * r.Jitter * rnd)
	}
	return d
}

// Validate reports the first thing wrong with r.
func (r RetryPolicy) Validate() error {
	switch r.Kind {
	case RetryExponential:
		if r.Base <= 0 {
			return fmt.Errorf("retry: exponential needs base > 0")
		}
		if r.Multiplier != 0 && r.Multiplier < 1 {
			return fmt.Errorf("retry: multiplier %v must be >= 1", r.Multiplier)
		}
	case RetrySchedule:
		if len(r.Schedule) == 0 {
			return fmt.Errorf("retry: schedule needs at least one step")
		}
		for _, d := range r.Schedule {
			if d < 0 {
				return fmt.Errorf("retry: schedule step %v is negative", d)
			}
		}
	case RetryConstant:
		if r.Base < 0 {
			return fmt.Errorf("retry: constant base %v is negative", r.Base)
		}
	default:
		return fmt.Errorf("retry: unknown kind %q (want exponential, schedule or constant)", r.Kind)
	}
	if r.Jitter < 0 || r.Jitter > 0.5 {
		return fmt.Errorf("retry: jitter %v must be within 0..0.5", r.Jitter)
	}
	return nil
}

// Timeouts are the deadlines of the in-flight stages.
type Timeouts struct {
	// Accept bounds SENT_TO_NS: the carrier must answer the send by then.
	Accept time.Duration
	// Carrier bounds DELIVERED_TO_NS: the carrier must transmit (push) or
	// finish the task (pull) by then.
	Carrier time.Duration
	// Device bounds SENT_TO_DEVICE: the device must confirm by then (push).
	Device time.Duration
}

// PollStep says how long to wait between polls of a pull carrier's task once
// the message is at least Age old.
type PollStep struct {
	Age   time.Duration
	Delay time.Duration
}

// Policy is what a route does with its messages over time.
type Policy struct {
	Retry       RetryPolicy
	MaxAttempts int           // sends allowed; after the last failure, DELIVERY_FAILED
	MaxAge      time.Duration // default expiry after creation; 0 for none
	Timeouts    Timeouts
	// RetryCarrierTimeout: a DELIVERED_TO_NS deadline retries the message when
	// true, and fails it at once when false (pull carriers: no retry after acceptance).
	RetryCarrierTimeout bool
	// PollDelays: how often a pull carrier's task is polled, by message age.
	PollDelays []PollStep
	// FirstPoll is the wait between a pull task's acceptance and its first
	// poll, whatever the message's age; 0 means PollDelay of its age.
	FirstPoll time.Duration
	// PollJitter, 0..0.5, adds a random share of each poll's wait, so that
	// tasks accepted together are not polled together.
	PollJitter float64
	// PollConcurrency bounds the polls of the route's tasks that run at
	// once on a node; 0 means DefaultPollConcurrency. A lane's run no more
	// than its Admission.Concurrency, when it has one (a DCU's tasks).
	PollConcurrency int
	// Admission is the flow control of the route's lanes.
	Admission Admission
	// CoalesceByTarget makes a message that names no coalesce key
	// coalesce by its target: a newer message for a target replaces the
	// one still waiting for it (QUEUED or TO_RETRY), which ends CANCELLED
	// "coalesced". A message without a target is left alone.
	CoalesceByTarget bool
	// DedupTTL, when positive, turns content-hash dedup on: a message
	// whose content (its route, target, payload or text and params; what
	// reaches the device, for a ContentHasher carrier) equals that of the
	// last message of the same tenant sent to its target, within DedupTTL
	// of that send, is not queued (see Store.Create).
	DedupTTL time.Duration
}

// PollDelay returns the wait before the next poll of a message of the given age.
func (p Policy) PollDelay(age time.Duration) time.Duration {
	d := 5 * time.Second
	for _, s := range p.PollDelays {
		if age >= s.Age {
			d = s.Delay
		}
	}
	return d
}

// NextPoll returns the wait before a poll of a pull task of the given
// age: FirstPoll for the first poll after acceptance (when set), else
// PollDelay(age); plus a random 0..PollJitter share of it, given rnd in
// [0, 1).
func (p Policy) NextPoll(first bool, age time.Duration, rnd float64) time.Duration {
	d := p.PollDelay(age)
	if first && p.FirstPoll > 0 {
		d = p.FirstPoll
	}
	if p.PollJitter > 0 && rnd > 0 {
		d += time.Duration(float64(d) * p.PollJitter * rnd)
	}
	return d
}

// Validate reports the first thing wrong with p.
func (p Policy) Validate() error {
	if err := p.Retry.Validate(); err != nil {
		return err
	}
	if p.MaxAttempts < 1 {
		return fmt.Errorf("max_attempts %d must be >= 1", p.MaxAttempts)
	}
	if p.MaxAge < 0 {
		return fmt.Errorf("max_age %v is negative", p.MaxAge)
	}
	if p.DedupTTL < 0 {
		return fmt.Errorf("dedup_ttl %v is negative", p.DedupTTL)
	}
	if p.FirstPoll < 0 {
		return fmt.Errorf("first poll %v is negative", p.FirstPoll)
	}
	if p.PollJitter < 0 || p.PollJitter > 0.5 {
		return fmt.Errorf("poll jitter %v must be within 0..0.5", p.PollJitter)
	}
	if p.PollConcurrency < 0 {
		return fmt.Errorf("poll concurrency %d is negative", p.PollConcurrency)
	}
	if p.Timeouts.Accept <= 0 || p.Timeouts.Carrier <= 0 || p.Timeouts.Device <= 0 {
		return fmt.Errorf("timeouts must all be > 0 (accept %v, carrier %v, device %v)",
			p.Timeouts.Accept, p.Timeouts.Carrier, p.Timeouts.Device)
	}
	return p.Admission.Validate()
}

// Profile names a policy preset that reproduces one kind of system's behaviour.
type Profile string

// The profiles.
const (
	ProfileLoRaWAN  Profile = "lorawan"  // ChirpStack downlinks (push)
	ProfileTaskPoll Profile = "taskpoll" // Calin-style polled task API (pull)
	ProfileChannel  Profile = "channel"  // chat channels and webhooks
	ProfileLXMF     Profile = "lxmf"     // LXMF over Reticulum
	ProfileClassC   Profile = "classc"   // class-C display downlinks
	ProfileRoom     Profile = "room"     // room push subscriptions
)

// Profiles maps each profile to its policy, with the numbers of the systems they reproduce.
var Profiles = map[Profile]Policy{
	ProfileLoRaWAN: {
		Retry:               RetryPolicy{Kind: RetryExponential, Base: 2 * time.Second, Multiplier: 2, Max: time.Hour, Jitter: 0.5},
		MaxAttempts:         12,
		Timeouts:            Timeouts{Accept: 20 * time.Second, Carrier: 15 * time.Minute, Device: 12 * time.Second},
		RetryCarrierTimeout: true,
		Admission:           Admission{Spacing: 2 * time.Second}, // the flood lock, per network
	},
	ProfileTaskPoll: {
		Retry:       RetryPolicy{Kind: RetryExponential, Base: 2 * time.Second, Multiplier: 2, Max: time.Hour, Jitter: 0.5},
		MaxAttempts: 12,
		MaxAge:      48 * time.Hour,
		Timeouts:    Timeouts{Accept: 20 * time.Second, Carrier: 48 * time.Hour, Device: 12 * time.Second},
		// The first poll 10 s after acceptance, then by the
		// message's age: under 20 s every 10 s, under 50 s every 15 s,
		// under 90 s every 20 s, then every 30 s; +0–20 % jitter spreads
		// tasks accepted together. At 48 h (max age, and the carrier
		// timeout after acceptance) the message fails "Timed out waiting
		// for remote task completion", without retry.
		PollDelays: []PollStep{
			{Age: 0, Delay: 10 * time.Second},
			{Age: 20 * time.Second, Delay: 15 * time.Second},
			{Age: 50 * time.Second, Delay: 20 * time.Second},
			{Age: 90 * time.Second, Delay: 30 * time.Second},
		},
		FirstPoll:  10 * time.Second,
		PollJitter: 0.2,
		Admission:  Admission{Concurrency: 5}, // 5 tasks at a time per DCU
	},
	ProfileChannel: {
		Retry:               RetryPolicy{Kind: RetrySchedule, Schedule: []time.Duration{5 * time.Second, 25 * time.Second, 2 * time.Minute, 10 * time.Minute}},
		MaxAttempts:         10,
		Timeouts:            Timeouts{Accept: 20 * time.Second, Carrier: 15 * time.Minute, Device: 12 * time.Second},
		RetryCarrierTimeout: true,
	},
	ProfileLXMF: {
		// LXMF's own outbound loop makes 5 attempts, 10 s apart
		// (DELIVERY_RETRY_WAIT) when an attempt was not proved; a path
		// request's 7 s wait is the carrier's own (WaitFor). A message
		// awaiting its proof is in flight, and a lane is its recipient:
		// one message at a time per recipient.
		Retry:               RetryPolicy{Kind: RetryConstant, Base: 10 * time.Second},
		MaxAttempts:         5,
		Timeouts:            Timeouts{Accept: 20 * time.Second, Carrier: 15 * time.Minute, Device: 12 * time.Second},
		RetryCarrierTimeout: true,
		Admission:           Admission{Concurrency: 1},
	},
	ProfileClassC: {
		// Retries after 2, 4, 8, 16 and 32 s (capped at 60 s): 6 sends in
		// all, at 0, 2, 6, 14, 30 and 62 s, then dead-lettered.
		Retry:               RetryPolicy{Kind: RetryExponential, Base: 2 * time.Second, Multiplier: 2, Max: time.Minute},
		MaxAttempts:         6,
		Timeouts:            Timeouts{Accept: 20 * time.Second, Carrier: 15 * time.Minute, Device: 12 * time.Second},
		RetryCarrierTimeout: true,
		// 30 per minute per gateway, 100 per minute per tenant,
		// a command equal to the last one sent to its device within an
		// hour skipped.
		Admission: Admission{Rate: Rate{N: 30, Per: time.Minute}, TenantRate: Rate{N: 100, Per: time.Minute}},
		DedupTTL:  time.Hour,
		// A newer command for a device replaces the one still pending for
		// it: during a burst each display gets its last state only.
		CoalesceByTarget: true,
	},
	ProfileRoom: {
		Retry:               RetryPolicy{Kind: RetryExponential, Base: time.Second, Multiplier: 2, Max: time.Hour},
		MaxAttempts:         5,
		Timeouts:            Timeouts{Accept: 20 * time.Second, Carrier: 15 * time.Minute, Device: 12 * time.Second},
		RetryCarrierTimeout: true,
	},
}

// ProfilePolicy returns the policy of the named profile.
func ProfilePolicy(name Profile) (Policy, error) {
	p, ok := Profiles[name]
	if !ok {
		return Policy{}, fmt.Errorf("unknown profile %q (want lorawan, taskpoll, channel, lxmf, classc or room)", name)
	}
	p.Retry.Schedule = append([]time.Duration(nil), p.Retry.Schedule...)
	p.PollDelays = append([]PollStep(nil), p.PollDelays...)
	return p, nil
}
