package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/carrier/calin"
	"github.com/heraldmq/herald/client"
	calinsim "github.com/heraldmq/herald/sim/calin"
)

// The environment variables of the demo's calin routes: the simulators'
// account.
const (
	demoCalinUserEnv     = "HERALD_DEMO_CALIN_USER"
	demoCalinPasswordEnv = "HERALD_DEMO_CALIN_PASSWORD"
)

// The demo's prepaid meters, on the DCU "dcu-1".
const (
	demoMeterV1 = "47001234567"
	demoMeterV2 = "58000000042"
	demoToken   = "12345678901234567890"
)

// demoTaskLatency is how long the simulated meters take to run a task.
const demoTaskLatency = time.Second

// demoMeterAPIs are the Calin API simulators of the demo, V1 and V2.
type demoMeterAPIs struct {
	v1, v2         *calinsim.Sim
	v1Addr, v2Addr string
}

// startDemoMeters starts a Calin V1 and a V2 simulator on loopback ports,
// and sets the demo routes' environment. They run until ctx ends.
func startDemoMeters(ctx context.Context) (*demoMeterAPIs, error) {
	apis := &demoMeterAPIs{}
	for _, api := range []calinsim.API{calinsim.V1, calinsim.V2} {
		sim := calinsim.New(calinsim.Config{API: api, Latency: demoTaskLatency, Seed: demoSeed})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		go func() { _ = calinsim.Serve(ctx, ln, sim) }()
		if api == calinsim.V1 {
			apis.v1, apis.v1Addr = sim, ln.Addr().String()
		} else {
			apis.v2, apis.v2Addr = sim, ln.Addr().String()
		}
	}
	for env, v := range map[string]string{demoCalinUserEnv: calinsim.DefaultUser, demoCalinPasswordEnv: calinsim.DefaultPassword} {
		if err := os.Setenv(env, v); err != nil {
			return nil, err
		}
	}
	return apis, nil
}

// routes returns the demo's calin routes, to the simulators.
func (a *demoMeterAPIs) routes() string {
	return fmt.Sprintf(`  - name: meters-v1
    carrier: calin-v1
    base_url: http://%s
    company: %s
    username_env: %s
    password_env: %s
  - name: meters-v2
    carrier: calin-v2
    base_url: http://%s
    company: %s
    user_id_env: %s
    password_env: %s
`, a.v1Addr, calinsim.DefaultCompany, demoCalinUserEnv, demoCalinPasswordEnv,
		a.v2Addr, calinsim.DefaultCompany, demoCalinUserEnv, demoCalinPasswordEnv)
}

// demoMeterTasks are the demo's meter commands: a credit reading and an
// STS token through V1, the same token again (the meter rejects a token it
// has taken: that fails at once), a relay switched off and a reading
// through V2. All go through the DCU's lane.
func demoMeterTasks() []demoSend {
	task := func(route, meter, text string, params map[string]string) demoSend {
		return demoSend{route: route, target: meter, lane: "dcu-1", text: text, params: params}
	}
	return []demoSend{
		task("meters-v1", demoMeterV1, "read the credit", map[string]string{"command": "reading", "data_item": "Current Credit Register"}),
		task("meters-v1", demoMeterV1, "top up", map[string]string{"command": "token", "token": demoToken}),
		task("meters-v1", demoMeterV1, "top up again", map[string]string{"command": "token", "token": demoToken}),
		task("meters-v2", demoMeterV2, "switch the relay off", map[string]string{"command": "control", "protocol_id": "20001", "customer_id": "demo"}),
		task("meters-v2", demoMeterV2, "read the voltage", map[string]string{"command": "reading", "protocol_id": "5", "customer_id": "demo"}),
	}
}

// printMeters says what the meter APIs did and what became of the tasks.
func printMeters(ctx context.Context, out io.Writer, api *client.Client, ids []string, apis *demoMeterAPIs) error {
	fmt.Fprintf(out, "\nCalin: V1 created %d tasks, V2 %d — one per message; the reused token was rejected by the meter\n",
		len(apis.v1.Tasks()), len(apis.v2.Tasks()))
	for i, id := range ids {
		v, err := api.Get(ctx, id)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("  #%-3d to meter %s (%s)  %s, task %s", i+1, v.Target, v.Route, v.Status, v.ExternalID)
		switch {
		case v.Status == herald.StatusDeliveryFailed:
			line += ": " + v.LastError
		case v.Result[calin.ResultExecution] != "":
			line += ", execution " + v.Result[calin.ResultExecution]
		}
		fmt.Fprintln(out, line)
	}
	return nil
}
