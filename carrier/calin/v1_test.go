package calin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
	calinsim "github.com/heraldmq/herald/sim/calin"
)

// TestV1ReadingCreatedThenPolledUntilDone: a reading creates one task with
// the meter and DataItem, answers its TaskNo, and polls pending until the
// task's latency has passed, then done.
func TestV1ReadingCreatedThenPolledUntilDone(t *testing.T) {
	clk := clock.NewFake(t0)
	s, url := startSim(t, calinsim.Config{API: calinsim.V1, Latency: 30 * time.Second}, clk, nil)
	c := newV1(t, url, clk)
	m := msg("47001", "command=reading", "data_item=Current Credit Register")
	var marks []string
	res, err := c.SendResumable(context.Background(), m, func(id string) error { marks = append(marks, id); return nil })
	if err != nil {
		t.Fatal(err)
	}
	tasks := s.Tasks()
	if len(tasks) != 1 || tasks[0].ID != res.ExternalID || tasks[0].Meter != "47001" || tasks[0].Command != "Current Credit Register" || tasks[0].Kind != calinsim.KindReading {
		t.Fatalf("tasks %+v, answer %q", tasks, res.ExternalID)
	}
	if len(marks) != 1 || marks[0] != "calin:creating:1" {
		t.Errorf("progress %q, want the creating mark before the call", marks)
	}
	m.ExternalID = res.ExternalID
	if got, _, err := c.Poll(context.Background(), m); got != herald.PollPending || err != nil {
		t.Fatalf("poll of a running task: %v, %v", got, err)
	}
	clk.Advance(30 * time.Second)
	if got, _, err := c.Poll(context.Background(), m); got != herald.PollSucceeded || err != nil {
		t.Fatalf("poll of a done task: %v, %v", got, err)
	}
	if n := len(calls(s, "COMM_RemoteReadingTask")); n != 2 {
		t.Errorf("%d polls, want 2", n)
	}
}

// TestV1EachCommandReachesItsEndpoints: control, write and token go to
// their own create and poll endpoints with their fields.
func TestV1EachCommandReachesItsEndpoints(t *testing.T) {
	clk := clock.NewFake(t0)
	s, url := startSim(t, calinsim.Config{API: calinsim.V1}, clk, nil)
	c := newV1(t, url, clk)
	for _, m := range []*herald.Message{
		msg("1", "command=control", "data_item=Switch Off"),
		msg("2", "command=write", "data_item=Date", "data=26080503"),
		msg("3", "command=token", "token=12345678901234567890"),
	} {
		res, err := c.Send(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		m.ExternalID = res.ExternalID
		if got, _, err := c.Poll(context.Background(), m); got != herald.PollSucceeded || err != nil {
			t.Fatalf("%s: poll %v, %v", m.Params["command"], got, err)
		}
	}
	tasks := s.Tasks()
	if len(tasks) != 3 || tasks[0].Kind != calinsim.KindControl || tasks[0].Command != "Switch Off" ||
		tasks[1].Kind != calinsim.KindWrite || tasks[1].Data != "26080503" ||
		tasks[2].Kind != calinsim.KindToken || tasks[2].Token != "12345678901234567890" {
		t.Fatalf("tasks %+v", tasks)
	}
	for _, p := range []string{"COMM_RemoteControlTask", "COMM_RemoteWriteTask", "COMM_RemoteTokenTask"} {
		if len(calls(s, p)) != 1 {
			t.Errorf("no poll on %s", p)
		}
	}
}

// TestV1FailedTaskIsDeliveredWithItsExecution: Result.Status "False"
// ends the task: delivered, with the execution's failure and its reason
// as the result; with RetryFailedTasks it is a failed task whose error is
// transient and says so.
func TestV1FailedTaskIsDeliveredWithItsExecution(t *testing.T) {
	clk := clock.NewFake(t0)
	_, url := startSim(t, calinsim.Config{API: calinsim.V1, FailRate: 1}, clk, nil)
	for _, retry := range []bool{false, true} {
		c := newV1(t, url, clk, func(c *V1Config) { c.RetryFailedTasks = retry })
		m := msg("47001", "command=control", "data_item=Switch On")
		res, err := c.Send(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		m.ExternalID = res.ExternalID
		got, result, err := c.Poll(context.Background(), m)
		switch {
		case !retry && (got != herald.PollSucceeded || err != nil || result[ResultExecution] != ExecFailure || result[ResultReason] != reasonExecutionFailed):
			t.Fatalf("poll of a failed task: %v, %v, %v; want PollSucceeded with the execution's failure", got, result, err)
		case retry && (got != herald.PollFailed || err == nil || isPermanent(err) || !strings.Contains(err.Error(), "Result.Status False")):
			t.Fatalf("poll of a failed task, retrying failed tasks: %v, %v; want PollFailed with a transient reason", got, err)
		}
	}
}

// TestV1UnknownTaskFailsPermanently: a poll answered without a Result,
// "task … does not exist", fails at once with the vendor's reason.
func TestV1UnknownTaskFailsPermanently(t *testing.T) {
	clk := clock.NewFake(t0)
	_, url := startSim(t, calinsim.Config{API: calinsim.V1}, clk, nil)
	c := newV1(t, url, clk)
	m := msg("47001", "command=reading", "data_item=Voltage")
	m.ExternalID = "4242"
	got, _, err := c.Poll(context.Background(), m)
	if got != herald.PollFailed || !isPermanent(err) || !strings.Contains(err.Error(), `"task 4242 does not exist"`) {
		t.Fatalf("poll of an unknown task: %v, %v; want PollFailed, permanent, with the vendor's reason", got, err)
	}
}

// TestV1RejectedTokenFailsPermanently: ResultCode 99 on the poll, or on
// the create, is permanent.
func TestV1RejectedTokenFailsPermanently(t *testing.T) {
	clk := clock.NewFake(t0)
	_, url := startSim(t, calinsim.Config{API: calinsim.V1, TokenRejectRate: 1}, clk, nil)
	c := newV1(t, url, clk)
	m := msg("47001", "command=token", "token=11112222333344445555")
	res, err := c.Send(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	m.ExternalID = res.ExternalID
	got, _, err := c.Poll(context.Background(), m)
	if got != herald.PollFailed || !isPermanent(err) || !strings.Contains(err.Error(), "rejected the token") {
		t.Fatalf("poll of a rejected token: %v, %v; want PollFailed, permanent", got, err)
	}

	_, url = startSim(t, calinsim.Config{API: calinsim.V1, TokenRejectRate: 1, TokenRejectAtCreate: true}, clk, nil)
	c = newV1(t, url, clk)
	m = msg("47001", "command=token", "token=11112222333344445555")
	var marks []string
	_, err = c.SendResumable(context.Background(), m, func(id string) error { marks = append(marks, id); return nil })
	if !isPermanent(err) || !strings.Contains(err.Error(), "ResultCode 99") {
		t.Fatalf("create of a rejected token: %v, want permanent", err)
	}
	if len(marks) != 2 || marks[1] != "calin:not-created:1" {
		t.Errorf("marks %q: want creating, then not-created", marks)
	}
}

// TestV1RefusedCreateIsTransientAndMarkedNotCreated: a vendor error code
// (wrong credentials here) is transient, quotes the reason, and marks the
// message so that its retry creates the task.
func TestV1RefusedCreateIsTransientAndMarkedNotCreated(t *testing.T) {
	clk := clock.NewFake(t0)
	s, url := startSim(t, calinsim.Config{API: calinsim.V1}, clk, nil)
	c := newV1(t, url, clk, func(c *V1Config) { c.Password = "wrong-password" })
	m := msg("47001", "command=reading", "data_item=Voltage")
	var marks []string
	_, err := c.SendResumable(context.Background(), m, func(id string) error { marks = append(marks, id); return nil })
	if err == nil || isPermanent(err) || inDoubt(err) || !strings.Contains(err.Error(), "ResultCode "+calinsim.V1ResultAuthFailed) {
		t.Fatalf("refused create: %v, want a transient error with the ResultCode", err)
	}
	if strings.Contains(err.Error(), "wrong-password") {
		t.Errorf("the password in an error: %v", err)
	}
	if len(marks) != 2 || marks[1] != "calin:not-created:1" || len(s.Tasks()) != 0 {
		t.Errorf("marks %q, %d tasks", marks, len(s.Tasks()))
	}
}

// TestV1Validate: the target and each command's params.
func TestV1Validate(t *testing.T) {
	c, err := NewV1(V1Config{BaseURL: "http://127.0.0.1:1", Company: "a", Username: "b", Password: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, ok := range []*herald.Message{
		msg("47001", "command=reading", "data_item=Voltage"),
		msg("47001", "command=control", "data_item=Switch On"),
		msg("47001", "command=write", "data_item=Date", "data=26080503"),
		msg("47001", "command=token", "token=1234 5678 9012 3456 7890"),
	} {
		if err := c.Validate(ok); err != nil {
			t.Errorf("%v: %v", ok.Params, err)
		}
	}
	for _, bad := range []struct {
		m     *herald.Message
		field string
	}{
		{msg("47001"), "params.command"},
		{msg("47001", "command=setting", "data_item=Date"), "params.command"},
		{msg("47001", "command=reading"), "params.data_item"},
		{msg("47001", "command=write", "data_item=Date"), "params.data"},
		{msg("47001", "command=token"), "params.token"},
		{msg("47001", "command=reading", "data_item=Voltage", "token=1"), "params.token"},
		{msg("47001", "command=reading", "data_item=Voltage", "protocol_id=39"), "params"},
		{msg("", "command=reading", "data_item=Voltage"), "target"},
		{msg("470 01 ", "command=reading", "data_item=Voltage"), "target"},
		{msg("47001", "command=reading", "data_item=Volt\x00age"), "params.data_item"},
		{msg(strings.Repeat("9", 200), "command=reading", "data_item=Voltage"), "target"},
	} {
		err := c.Validate(bad.m)
		var inv *herald.InvalidError
		if !errors.As(err, &inv) || inv.Field != bad.field {
			t.Errorf("%q %v: %v, want an invalid %s", bad.m.Target, bad.m.Params, err, bad.field)
		}
	}
	if _, err := c.Send(context.Background(), msg("47001")); !isPermanent(err) {
		t.Errorf("send of an invalid message: %v, want permanent", err)
	}
}

// TestNewV1RefusesAnIncompleteAccount: every credential and an http URL
// are required.
func TestNewV1RefusesAnIncompleteAccount(t *testing.T) {
	for _, cfg := range []V1Config{
		{BaseURL: "http://x", Username: "u", Password: "p"},
		{BaseURL: "http://x", Company: "c", Password: "p"},
		{BaseURL: "http://x", Company: "c", Username: "u"},
		{BaseURL: "ftp://x", Company: "c", Username: "u", Password: "p"},
		{BaseURL: "http://x?a=b", Company: "c", Username: "u", Password: "p"},
	} {
		if c, err := NewV1(cfg); err == nil {
			c.Close()
			t.Errorf("%+v accepted", cfg)
		}
	}
}
