package redis

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldmq/herald"
)

// errNoLanes refuses admission rules, which this store does not keep yet.
var errNoLanes = fmt.Errorf("redis store: lane admission (admission, tenant_rate): %w", errors.ErrUnsupported)

// SetAdmission accepts no gated route yet.
func (s *Store) SetAdmission(ctx context.Context, rules map[string]herald.Admission) error {
	if len(rules) > 0 {
		return errNoLanes
	}
	return nil
}

// Lane knows no lane yet.
func (s *Store) Lane(ctx context.Context, route, lane, tenant string) (herald.LaneState, error) {
	return herald.LaneState{Route: route, Lane: lane}, nil
}

// Lanes knows no lane yet.
func (s *Store) Lanes(ctx context.Context, route string, limit int) ([]herald.LaneState, error) {
	return nil, nil
}
