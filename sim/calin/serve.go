package calin

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// shutdownGrace is how long Serve waits for calls in flight after its
// context ends.
const shutdownGrace = 5 * time.Second

// ListenAndServe serves s on addr until ctx ends; then it shuts the server
// down and returns nil.
func ListenAndServe(ctx context.Context, addr string, s *Sim) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return Serve(ctx, ln, s)
}

// Serve serves s on ln until ctx ends; then it shuts the server down and
// returns nil. It closes ln.
func Serve(ctx context.Context, ln net.Listener, s *Sim) error {
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
