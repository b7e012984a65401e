package main

import (
	"encoding/hex"
	"fmt"
	"log/slog"
	"path/filepath"

	lxmfcarrier "github.com/heraldmq/herald/carrier/lxmf"
	"github.com/heraldmq/herald/config"
	"github.com/heraldmq/herald/reticulum"
)

// lxmfWiring builds the lxmf routes' carriers: one endpoint (node,
// identity, connection) per identity file, shared by the routes that
// name it, and each route's fallback once every route is built.
type lxmfWiring struct {
	log       *slog.Logger
	endpoints map[string]*lxmfcarrier.Endpoint
	carriers  map[string]*lxmfcarrier.Carrier
	fallbacks map[string]string // route -> its fallback_route
}

func newLXMFWiring(log *slog.Logger) *lxmfWiring {
	return &lxmfWiring{log: log, endpoints: map[string]*lxmfcarrier.Endpoint{}, carriers: map[string]*lxmfcarrier.Carrier{}, fallbacks: map[string]string{}}
}

// carrier builds the carrier of lxmf route rc.
func (w *lxmfWiring) carrier(rc config.Route) (*lxmfcarrier.Carrier, error) {
	key := filepath.Clean(rc.IdentityFile)
	ep := w.endpoints[key]
	if ep == nil {
		var err error
		ep, err = lxmfcarrier.NewEndpoint(lxmfcarrier.EndpointConfig{TCP: rc.Reticulum.TCP, IdentityFile: rc.IdentityFile, DisplayName: rc.DisplayName,
			Logger: w.log.With("route", rc.Name)})
		if err != nil {
			return nil, fmt.Errorf("identity_file %s: %w", rc.IdentityFile, err)
		}
		w.endpoints[key] = ep
	}
	cfg := lxmfcarrier.Config{Endpoint: ep, Method: lxmfcarrier.Method(rc.Method), WaitForPath: rc.WaitForPath.D()}
	if rc.PropagationNode != "" {
		b, err := hex.DecodeString(rc.PropagationNode)
		if err != nil {
			return nil, fmt.Errorf("propagation_node: %w", err)
		}
		if cfg.PropagationNode, err = reticulum.HashFromBytes(b); err != nil {
			return nil, fmt.Errorf("propagation_node: %w", err)
		}
	}
	c, err := lxmfcarrier.New(cfg)
	if err != nil {
		return nil, err
	}
	w.carriers[rc.Name] = c
	if rc.FallbackRoute != "" {
		w.fallbacks[rc.Name] = rc.FallbackRoute
	}
	return c, nil
}

// link gives each route its fallback route's carrier.
func (w *lxmfWiring) link() error {
	for name, fb := range w.fallbacks {
		f, ok := w.carriers[fb]
		if !ok {
			return fmt.Errorf("route %q: fallback_route %q is not an lxmf route", name, fb)
		}
		w.carriers[name].SetFallback(f)
	}
	return nil
}

// close closes every carrier built, and with the last of each endpoint
// the endpoint: when building the routes failed half way.
func (w *lxmfWiring) close() {
	for _, c := range w.carriers {
		c.Close()
	}
}
