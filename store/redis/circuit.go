package redis

import (
	"context"
	"fmt"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// ReportCircuit feeds the circuit breaker of r's lane with one send's
// outcome, and returns what changed: see lua/circuit.lua, which keeps the
// circuit in the lane's state, and lua/claim.lua, which admits the probe.
func (s *Store) ReportCircuit(ctx context.Context, r herald.CircuitReport) (herald.CircuitChange, error) {
	failed := 0
	if r.Failed {
		failed = 1
	}
	res, err := s.eval(ctx, circuitScript, esc(r.Route), esc(r.Lane), unixms.From(r.At), failed, herald.MaxCircuitCoolDown.Milliseconds())
	if err != nil {
		return herald.CircuitChange{}, wrap(ctx, "report circuit", err)
	}
	reply, _ := res.([]any)
	var n [4]int64 // opened, closed, until, failures
	if len(reply) != len(n) {
		return herald.CircuitChange{}, fmt.Errorf("redis report circuit: unexpected reply %v", res)
	}
	for i, v := range reply {
		n[i], _ = v.(int64)
	}
	return herald.CircuitChange{Opened: n[0] == 1, Closed: n[1] == 1, Until: unixms.Time(n[2]), Failures: int(n[3])}, nil
}
