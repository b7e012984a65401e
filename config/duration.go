package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written as a Go duration string ("2s", "15m",
// "48h"), as a whole number of days ("7d"), or as 0.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d as a Go duration string.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML parses a duration scalar.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseDuration(n)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes d as a Go duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

func parseDuration(n *yaml.Node) (time.Duration, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("line %d: want a duration such as 2s, 15m or 48h", n.Line)
	}
	s := strings.TrimSpace(n.Value)
	if s == "0" {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if k, err := strconv.Atoi(days); err == nil && k >= 0 {
			return time.Duration(k) * 24 * time.Hour, nil
		}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("line %d: %q is not a duration (want e.g. 2s, 15m or 48h)", n.Line, s)
	}
	if v < 0 {
		return 0, fmt.Errorf("line %d: duration %s is negative", n.Line, s)
	}
	return v, nil
}

// Rate is a token-bucket rate written "N/unit" (unit s, sec, second, m, min,
// minute, h, hour): N tokens per unit, with a burst of N.
type Rate struct {
	// N is the tokens per period, and the burst.
	N int
	// Per is the period.
	Per time.Duration
}

// IsZero reports whether no rate is set.
func (r Rate) IsZero() bool { return r.N == 0 }

// PerSecond returns the rate in tokens per second.
func (r Rate) PerSecond() float64 {
	if r.Per <= 0 {
		return 0
	}
	return float64(r.N) / r.Per.Seconds()
}

// String formats r as "N/unit".
func (r Rate) String() string {
	if r.IsZero() {
		return ""
	}
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"h", time.Hour}, {"min", time.Minute}, {"s", time.Second}} {
		if r.Per == u.d {
			return fmt.Sprintf("%d/%s", r.N, u.name)
		}
	}
	return fmt.Sprintf("%d/%s", r.N, r.Per)
}

var rateUnits = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "second": time.Second,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute,
	"h": time.Hour, "hour": time.Hour,
}

// UnmarshalYAML parses "N/unit".
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	bad := fmt.Errorf("line %d: %q is not a rate (want e.g. 30/min, 5/s or 100/hour)", n.Line, n.Value)
	if n.Kind != yaml.ScalarNode {
		return bad
	}
	num, unit, ok := strings.Cut(strings.TrimSpace(n.Value), "/")
	if !ok {
		return bad
	}
	k, err := strconv.Atoi(strings.TrimSpace(num))
	per, known := rateUnits[strings.TrimSpace(unit)]
	if err != nil || k <= 0 || !known {
		return bad
	}
	*r = Rate{N: k, Per: per}
	return nil
}

// MarshalYAML writes r as "N/unit".
func (r Rate) MarshalYAML() (any, error) { return r.String(), nil }
