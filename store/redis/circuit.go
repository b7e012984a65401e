package redis

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldmq/herald"
)

// ReportCircuit is not kept by this store yet: circuit breakers are
// refused on Redis (see cmd/herald's buildRoutes).
func (s *Store) ReportCircuit(ctx context.Context, r herald.CircuitReport) (herald.CircuitChange, error) {
	return herald.CircuitChange{}, fmt.Errorf("redis store: circuit breakers: %w", errors.ErrUnsupported)
}
