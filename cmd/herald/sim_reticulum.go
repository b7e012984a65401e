package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldmq/herald/internal/simserve"
	"github.com/heraldmq/herald/sim/reticulum"
)

// simReticulumFlags are the flags of `herald sim reticulum`.
type simReticulumFlags struct {
	listen, http                   string
	recipients, rejecting, offline int
	late                           time.Duration
	stampCost, pnStampCost         int
	propagationNode, refusingNode  bool
	seed                           int64
}

// simReticulumCommand is `herald sim reticulum`: a Reticulum transport
// node with LXMF recipients and propagation nodes (package sim/reticulum).
func simReticulumCommand() *cobra.Command {
	var f simReticulumFlags
	cmd := &cobra.Command{
		Use:   "reticulum",
		Short: "A Reticulum transport node (TCP server interface, as rnsd's) with LXMF recipients and propagation nodes (GET /sim/peers, /sim/propagation-nodes, /sim/stats; POST /sim/peers/{name}/online|offline)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, n := range []struct {
				flag string
				v    int
			}{{"--recipients", f.recipients}, {"--rejecting", f.rejecting}, {"--offline", f.offline}, {"--stamp-cost", f.stampCost}, {"--pn-stamp-cost", f.pnStampCost}} {
				if n.v < 0 {
					return fmt.Errorf("%s %d: want ≥ 0", n.flag, n.v)
				}
			}
			if f.late < 0 {
				return fmt.Errorf("--late %v: want ≥ 0", f.late)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runSimReticulum(ctx, f, cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:4242", "address of the transport node's TCP server interface (a route's reticulum: {tcp: ...})")
	fl.StringVar(&f.http, "http", "127.0.0.1:4243", "address of the records and controls (empty: none)")
	fl.IntVar(&f.recipients, "recipients", 2, "LXMF recipients that announce and prove what they receive (recipient-1, ...)")
	fl.IntVar(&f.rejecting, "rejecting", 0, "recipients that decline messages offered as resources: the sender's REJECTED (rejecting-1, ...)")
	fl.IntVar(&f.offline, "offline", 0, "recipients that never come online: no path to them (offline-1, ...)")
	fl.DurationVar(&f.late, "late", 0, "add a recipient (late-1) that comes online and announces this long after the start (0: none)")
	fl.IntVar(&f.stampCost, "stamp-cost", 0, "the stamp cost the recipients ask senders for (0: none)")
	fl.BoolVar(&f.propagationNode, "propagation-node", true, "add a propagation node that takes uploads (pn)")
	fl.BoolVar(&f.refusingNode, "refusing-node", false, "add a propagation node that refuses every upload's stamp (pn-refusing)")
	fl.IntVar(&f.pnStampCost, "pn-stamp-cost", 8, "the propagation stamp cost the propagation nodes announce and require")
	fl.Int64Var(&f.seed, "seed", 1, "draws the identities: the same seed gives the same addresses")
	return cmd
}

// runSimReticulum runs the simulator until ctx ends, printing each peer's
// address.
func runSimReticulum(ctx context.Context, f simReticulumFlags, out io.Writer) error {
	s, err := reticulum.Start(reticulum.Config{Listen: f.listen, Seed: f.seed})
	if err != nil {
		return err
	}
	defer s.Close()
	add := func(n int, prefix string, cfg reticulum.PeerConfig) error {
		for i := 1; i <= n; i++ {
			cfg.Name = fmt.Sprintf("%s-%d", prefix, i)
			p, err := s.AddPeer(cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "recipient %-12s %s%s\n", p.Name(), p.Address(), map[bool]string{true: " (offline)"}[cfg.Offline])
		}
		return nil
	}
	for _, g := range []struct {
		n      int
		prefix string
		cfg    reticulum.PeerConfig
	}{{f.recipients, "recipient", reticulum.PeerConfig{StampCost: f.stampCost}},
		{f.rejecting, "rejecting", reticulum.PeerConfig{StampCost: f.stampCost, Reject: true}},
		{f.offline, "offline", reticulum.PeerConfig{StampCost: f.stampCost, Offline: true}}} {
		if err := add(g.n, g.prefix, g.cfg); err != nil {
			return err
		}
	}
	if f.late > 0 {
		if err := add(1, "late", reticulum.PeerConfig{StampCost: f.stampCost, Offline: true}); err != nil {
			return err
		}
		late := s.Peers()[len(s.Peers())-1]
		timer := time.AfterFunc(f.late, func() {
			if err := late.Online(); err == nil {
				fmt.Fprintf(out, "recipient %s came online\n", late.Name())
			}
		})
		defer timer.Stop()
	}
	for _, pn := range []struct {
		on     bool
		name   string
		reject bool
	}{{f.propagationNode, "pn", false}, {f.refusingNode, "pn-refusing", true}} {
		if !pn.on {
			continue
		}
		n, err := s.AddPropagationNode(reticulum.PropagationNodeConfig{Name: pn.name, StampCost: f.pnStampCost, Reject: pn.reject})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "propagation node %-5s %s (stamp cost %d)\n", pn.name, n.Address(), f.pnStampCost)
	}
	fmt.Fprintf(out, "reticulum transport node listening on %s (transport id %s)\n", s.Addr(), s.TransportID())
	if f.http == "" {
		<-ctx.Done()
		return nil
	}
	fmt.Fprintf(out, "records on http://%s/sim/peers\n", f.http)
	return simserve.ListenAndServe(ctx, f.http, s.Handler())
}
