package config

import (
	"fmt"

	"github.com/heraldmq/herald"
)

// Health overrides the thresholds of GET /v1/health. Absent keys keep
// herald.DefaultHealthThresholds.
type Health struct {
	// QueueDepthWarning and QueueDepthCritical bound the waiting messages
	// (QUEUED and TO_RETRY).
	QueueDepthWarning  *int `yaml:"queue_depth_warning"`
	QueueDepthCritical *int `yaml:"queue_depth_critical"`
	// DeadLettersWarning and DeadLettersCritical bound the DELIVERY_FAILED messages.
	DeadLettersWarning  *int `yaml:"dead_letters_warning"`
	DeadLettersCritical *int `yaml:"dead_letters_critical"`
	// SuccessRateWarning and SuccessRateCritical are the success rates (0..1)
	// below which the health is warning and critical.
	SuccessRateWarning  *float64 `yaml:"success_rate_warning"`
	SuccessRateCritical *float64 `yaml:"success_rate_critical"`
}

// Thresholds applies h over herald.DefaultHealthThresholds. A nil h returns
// the defaults.
func (h *Health) Thresholds() herald.HealthThresholds {
	t := herald.DefaultHealthThresholds
	if h == nil {
		return t
	}
	setInt(&t.QueueDepthWarning, h.QueueDepthWarning)
	setInt(&t.QueueDepthCritical, h.QueueDepthCritical)
	setInt(&t.DeadLettersWarning, h.DeadLettersWarning)
	setInt(&t.DeadLettersCritical, h.DeadLettersCritical)
	setFloat(&t.SuccessRateWarning, h.SuccessRateWarning)
	setFloat(&t.SuccessRateCritical, h.SuccessRateCritical)
	return t
}

// validate reports thresholds that cannot work: negative, out of order, or
// a success rate outside 0..1.
func (h *Health) validate() error {
	t := h.Thresholds()
	switch {
	case t.QueueDepthWarning < 0 || t.DeadLettersWarning < 0:
		return fmt.Errorf("health: thresholds must not be negative")
	case t.QueueDepthCritical < t.QueueDepthWarning:
		return fmt.Errorf("health: queue_depth_critical %d is below queue_depth_warning %d", t.QueueDepthCritical, t.QueueDepthWarning)
	case t.DeadLettersCritical < t.DeadLettersWarning:
		return fmt.Errorf("health: dead_letters_critical %d is below dead_letters_warning %d", t.DeadLettersCritical, t.DeadLettersWarning)
	case t.SuccessRateWarning < 0 || t.SuccessRateWarning > 1 || t.SuccessRateCritical < 0 || t.SuccessRateCritical > 1:
		return fmt.Errorf("health: success rates must be within 0..1")
	case t.SuccessRateCritical > t.SuccessRateWarning:
		return fmt.Errorf("health: success_rate_critical %v is above success_rate_warning %v", t.SuccessRateCritical, t.SuccessRateWarning)
	}
	return nil
}

func setInt(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

func setFloat(dst *float64, v *float64) {
	if v != nil {
		*dst = *v
	}
}
