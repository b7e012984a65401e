package redis

import (
	"context"
	"errors"
	"fmt"
)

// FirstActive is not kept by this store yet: ordered routes are refused on
// Redis (see cmd/herald's buildRoutes).
func (s *Store) FirstActive(ctx context.Context, route, target string) (string, error) {
	return "", fmt.Errorf("redis store: ordered routes: %w", errors.ErrUnsupported)
}
