package config

import (
	"fmt"
	"time"

	"github.com/heraldmq/herald"
)

// PolicyOverrides are a route's changes to its profile's policy. Every field
// is optional; a set field replaces the profile's.
type PolicyOverrides struct {
	// Retry changes how long to wait before each retry.
	Retry *RetryOverrides `yaml:"retry"`
	// MaxAttempts is the number of sends allowed.
	MaxAttempts *int `yaml:"max_attempts"`
	// MaxAge is the default expiry after creation; 0 for none.
	MaxAge *Duration `yaml:"max_age"`
	// Timeouts change the stage deadlines.
	Timeouts *TimeoutsOverrides `yaml:"timeouts"`
}

// RetryOverrides change the profile's retry policy. When Kind names another
// kind than the profile's, the retry policy starts afresh from the fields
// given here; otherwise each set field replaces the profile's.
type RetryOverrides struct {
	// Kind is exponential, schedule or constant.
	Kind string `yaml:"kind"`
	// Base is the first delay (exponential) or every delay (constant).
	Base *Duration `yaml:"base"`
	// Multiplier is the growth per retry (exponential).
	Multiplier *float64 `yaml:"multiplier"`
	// Max caps the delay before jitter (exponential).
	Max *Duration `yaml:"max"`
	// Jitter, 0..0.5, is the extra random share of each delay.
	Jitter *float64 `yaml:"jitter"`
	// Schedule lists the delays in order (schedule); the last repeats.
	Schedule []Duration `yaml:"schedule"`
}

// TimeoutsOverrides change the profile's stage timeouts.
type TimeoutsOverrides struct {
	// Accept bounds SENT_TO_NS.
	Accept *Duration `yaml:"accept"`
	// Carrier bounds DELIVERED_TO_NS.
	Carrier *Duration `yaml:"carrier"`
	// Device bounds SENT_TO_DEVICE.
	Device *Duration `yaml:"device"`
}

// ProfileName returns the route's profile: Profile, or the carrier's default.
func (r Route) ProfileName() herald.Profile {
	if r.Profile != "" {
		return herald.Profile(r.Profile)
	}
	return DefaultProfile(r.Carrier)
}

// Policy returns the route's policy: its profile's, with each override that
// is set applied, validated.
func (r Route) Policy() (herald.Policy, error) {
	p, err := r.policy()
	if err != nil {
		return herald.Policy{}, fmt.Errorf("route %q: %w", r.Name, err)
	}
	return p, nil
}

func (r Route) policy() (herald.Policy, error) {
	p, err := herald.ProfilePolicy(r.ProfileName())
	if err != nil {
		return herald.Policy{}, fmt.Errorf("profile: %w", err)
	}
	if o := r.Overrides; o != nil {
		o.apply(&p)
	}
	if a := r.Admission; a != nil { // replaces the profile's, as a whole
		p.Admission.Spacing, p.Admission.Concurrency, p.Admission.Rate = a.Spacing.D(), a.Concurrency, herald.Rate(a.Rate)
	} else if r.Carrier == CarrierTelegram && p.Admission.Spacing == 0 {
		// Per chat: a telegram message's lane is its chat. One message at a
		// time, so that the next waits for a long text's last chunk.
		p.Admission.Spacing, p.Admission.Concurrency = DefaultTelegramSpacing, DefaultTelegramConcurrency
	}
	if !r.TenantRate.IsZero() {
		p.Admission.TenantRate = herald.Rate(r.TenantRate)
	}
	switch {
	case !r.RouteRate.IsZero():
		p.Admission.RouteRate = herald.Rate(r.RouteRate)
	case r.Carrier == CarrierTelegram:
		p.Admission.RouteRate = herald.Rate(DefaultTelegramRouteRate) // per bot: a telegram route is one bot
	}
	if r.Ordered {
		p.Admission.Ordered = true
	}
	if r.DedupTTL != 0 {
		p.DedupTTL = r.DedupTTL.D()
	}
	if r.Coalesce != nil {
		p.CoalesceByTarget = *r.Coalesce
	}
	p.PollConcurrency = r.PollConcurrency
	setDuration(&p.FirstPoll, r.FirstPoll)
	setFloat(&p.PollJitter, r.PollJitter)
	circuit := r.Circuit
	if circuit == nil {
		switch r.Carrier {
		case CarrierWebhook:
			circuit = &DefaultWebhookCircuit
		case CarrierTelegram:
			circuit = &DefaultTelegramCircuit
		}
	}
	if circuit != nil {
		p.Admission.Circuit = herald.Circuit{Failures: circuit.Failures, CoolDown: circuit.CoolDown.D()}
	}
	if err := p.Validate(); err != nil {
		return herald.Policy{}, fmt.Errorf("policy: %w", err)
	}
	return p, nil
}

func (o *PolicyOverrides) apply(p *herald.Policy) {
	if o.Retry != nil {
		o.Retry.apply(&p.Retry)
	}
	setInt(&p.MaxAttempts, o.MaxAttempts)
	setDuration(&p.MaxAge, o.MaxAge)
	if t := o.Timeouts; t != nil {
		setDuration(&p.Timeouts.Accept, t.Accept)
		setDuration(&p.Timeouts.Carrier, t.Carrier)
		setDuration(&p.Timeouts.Device, t.Device)
	}
}

func (o *RetryOverrides) apply(r *herald.RetryPolicy) {
	if o.Kind != "" && herald.RetryKind(o.Kind) != r.Kind {
		*r = herald.RetryPolicy{Kind: herald.RetryKind(o.Kind)}
	}
	setDuration(&r.Base, o.Base)
	setFloat(&r.Multiplier, o.Multiplier)
	setDuration(&r.Max, o.Max)
	setFloat(&r.Jitter, o.Jitter)
	if o.Schedule != nil {
		r.Schedule = make([]time.Duration, len(o.Schedule))
		for i, d := range o.Schedule {
			r.Schedule[i] = d.D()
		}
	}
}

func setDuration(dst *time.Duration, v *Duration) {
	if v != nil {
		*dst = v.D()
	}
}
