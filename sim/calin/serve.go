package calin

import (
	"context"
	"net"

	"github.com/heraldmq/herald/internal/simserve"
)

// ListenAndServe serves s on addr until ctx ends; then it shuts the server
// down and returns nil.
func ListenAndServe(ctx context.Context, addr string, s *Sim) error {
	return simserve.ListenAndServe(ctx, addr, s)
}

// Serve serves s on ln until ctx ends; then it shuts the server down and
// returns nil. It closes ln.
func Serve(ctx context.Context, ln net.Listener, s *Sim) error {
	return simserve.Serve(ctx, ln, s)
}
