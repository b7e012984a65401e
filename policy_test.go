package herald

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestLoRaWANBackoffDoublesWithJitterAndCap(t *testing.T) {
	p, err := ProfilePolicy(ProfileLoRaWAN)
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxAttempts != 12 {
		t.Fatalf("lorawan attempts = %d, want 12 (11 retries)", p.MaxAttempts)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 11; n++ {
		base := min(2*time.Second<<(n-1), time.Hour)
		if got := p.Retry.Delay(n, 0); got != base {
			t.Errorf("retry %d without jitter = %v, want %v", n, got, base)
		}
		if got := p.Retry.Delay(n, 0.999999); got <= base*149/100 || got > base*3/2 {
			t.Errorf("retry %d at full jitter = %v, want just under %v", n, got, base*3/2)
		}
		for range 100 {
			d := p.Retry.Delay(n, rng.Float64())
			if d < base || d > base*3/2 {
				t.Fatalf("retry %d delay %v outside [%v, %v]", n, d, base, base*3/2)
			}
		}
	}
	if got := p.Retry.Delay(30, 0); got != time.Hour {
		t.Errorf("retry 30 = %v, want the 1h cap", got)
	}
}

func TestChannelScheduleRepeatsItsLastStep(t *testing.T) {
	p, _ := ProfilePolicy(ProfileChannel)
	want := []time.Duration{5 * time.Second, 25 * time.Second, 2 * time.Minute, 10 * time.Minute, 10 * time.Minute, 10 * time.Minute}
	for i, w := range want {
		if got := p.Retry.Delay(i+1, 0.7); got != w {
			t.Errorf("channel retry %d = %v, want %v", i+1, got, w)
		}
	}
}

func TestLXMFConstantTenSecondsFiveAttempts(t *testing.T) {
	p, _ := ProfilePolicy(ProfileLXMF)
	if p.MaxAttempts != 5 || p.Admission.Concurrency != 1 || !p.RetryCarrierTimeout {
		t.Errorf("lxmf attempts = %d, concurrency %d, retry carrier timeout %v; want 5, 1 per recipient, true", p.MaxAttempts, p.Admission.Concurrency, p.RetryCarrierTimeout)
	}
	for n := 1; n <= 5; n++ {
		if got := p.Retry.Delay(n, 0.5); got != 10*time.Second {
			t.Errorf("lxmf retry %d = %v, want 10s", n, got)
		}
	}
}

func TestClassCAndRoomProfiles(t *testing.T) {
	c, _ := ProfilePolicy(ProfileClassC)
	for n, w := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute} {
		if got := c.Retry.Delay(n+1, 0); got != w {
			t.Errorf("classc retry %d = %v, want %v", n+1, got, w)
		}
	}
	if c.MaxAttempts != 6 {
		t.Errorf("classc attempts = %d, want 6", c.MaxAttempts)
	}
	r, _ := ProfilePolicy(ProfileRoom)
	// T = delay × multiplier^attempt, attempt counted from 0.
	if got := r.Retry.Delay(3, 0); got != 4*time.Second {
		t.Errorf("room retry 3 = %v, want 4s", got)
	}
}

func TestTaskPollDelaysGrowWithAge(t *testing.T) {
	p, _ := ProfilePolicy(ProfileTaskPoll)
	if p.MaxAge != 48*time.Hour || p.Timeouts.Carrier != 48*time.Hour || p.RetryCarrierTimeout {
		t.Errorf("taskpoll: max age %v, carrier timeout %v, retry after acceptance %v; want 48h, 48h and no retry",
			p.MaxAge, p.Timeouts.Carrier, p.RetryCarrierTimeout)
	}
	ms := time.Millisecond
	for _, c := range []struct{ age, want time.Duration }{
		{0, 10 * time.Second}, {19_999 * ms, 10 * time.Second},
		{20_000 * ms, 15 * time.Second}, {49_999 * ms, 15 * time.Second},
		{50_000 * ms, 20 * time.Second}, {89_999 * ms, 20 * time.Second},
		{90_000 * ms, 30 * time.Second}, {47 * time.Hour, 30 * time.Second},
	} {
		if got := p.PollDelay(c.age); got != c.want {
			t.Errorf("poll delay at age %v = %v, want %v", c.age, got, c.want)
		}
		if got := p.NextPoll(false, c.age, 0); got != c.want {
			t.Errorf("next poll at age %v without jitter = %v, want %v", c.age, got, c.want)
		}
	}
	// The first poll is 10 s after acceptance, however long the message waited.
	for _, age := range []time.Duration{0, 19_999 * ms, 20_000 * ms, time.Hour} {
		if got := p.NextPoll(true, age, 0); got != 10*time.Second {
			t.Errorf("first poll at age %v = %v, want 10s", age, got)
		}
	}
}

func TestPollJitterSpreadsPollsUpward(t *testing.T) {
	p, _ := ProfilePolicy(ProfileTaskPoll)
	seen := map[time.Duration]bool{}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		d := p.NextPoll(false, time.Hour, rng.Float64())
		if d < 30*time.Second || d >= 36*time.Second {
			t.Fatalf("jittered poll %v outside [30s, 36s)", d)
		}
		seen[d] = true
	}
	if len(seen) < 90 {
		t.Errorf("100 jittered polls took %d distinct waits: not spread", len(seen))
	}
	p.PollJitter = 0.6
	if p.Validate() == nil {
		t.Error("poll jitter 0.6 validated")
	}
	p.PollJitter, p.FirstPoll = 0, -time.Second
	if p.Validate() == nil {
		t.Error("a negative first poll validated")
	}
}

func TestEveryProfileValidates(t *testing.T) {
	for name := range Profiles {
		p, err := ProfilePolicy(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("profile %s: %v", name, err)
		}
	}
	if _, err := ProfilePolicy("nope"); err == nil {
		t.Error("unknown profile accepted")
	}
}

func TestRetryPolicyValidateRejectsNonsense(t *testing.T) {
	bad := []RetryPolicy{
		{Kind: "linear", Base: time.Second},
		{Kind: RetryExponential},
		{Kind: RetryExponential, Base: time.Second, Multiplier: 0.5},
		{Kind: RetrySchedule},
		{Kind: RetryExponential, Base: time.Second, Jitter: 0.6},
		{Kind: RetryConstant, Base: -time.Second},
	}
	for _, r := range bad {
		if err := r.Validate(); err == nil {
			t.Errorf("%+v validated", r)
		}
	}
}

func TestErrorClassifier(t *testing.T) {
	c, err := NewErrorClassifier(DefaultPermanentPatterns)
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]bool{
		"Bad Request: chat not found":            true,
		"Forbidden: bot was blocked by the user": true,
		"ambiguous telegram recipient":           true,
		"timeout awaiting response headers":      false,
		"429 Too Many Requests":                  false,
	} {
		if got := c.Permanent(errorString(text)); got != want {
			t.Errorf("Permanent(%q) = %v, want %v", text, got, want)
		}
	}
	if !c.Permanent(Permanent(errorString("anything"))) {
		t.Error("a PermanentError must be permanent")
	}
	if _, err := NewErrorClassifier([]string{"("}); err == nil {
		t.Error("a bad pattern compiled")
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestIDsAreTimeOrderedWhenTheClockStandsStill(t *testing.T) {
	var g idGenerator
	now := time.UnixMilli(1_700_000_000_000)
	prev := g.next(now)
	for i := 0; i < 10000; i++ {
		id := g.next(now)
		if id <= prev {
			t.Fatalf("id %s not after %s", id, prev)
		}
		prev = id
	}
	if later := g.next(now.Add(time.Millisecond)); later <= prev {
		t.Fatalf("later id %s not after %s", later, prev)
	}
	if len(prev) != 36 || prev[14] != '7' {
		t.Fatalf("id %s is not UUIDv7-shaped", prev)
	}
}
