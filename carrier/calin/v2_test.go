package calin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/clock"
	calinsim "github.com/heraldmq/herald/sim/calin"
)

// TestV2ReadingLogsInOnceThenCreatesAndPolls: the first call logs in; the
// token serves the create and the polls; the task's status goes from 0 to 1.
func TestV2ReadingLogsInOnceThenCreatesAndPolls(t *testing.T) {
	clk := clock.NewFake(t0)
	s, url := startSim(t, calinsim.Config{API: calinsim.V2, Latency: 20 * time.Second, CustomerID: "c-1"}, clk, nil)
	c := newV2(t, url, clk)
	m := msg("58001", "command=reading", "protocol_id=39")
	res, err := c.Send(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	tasks := s.Tasks()
	if len(tasks) != 1 || tasks[0].ID != res.ExternalID || tasks[0].ProtocolID != 39 || tasks[0].Meter != "58001" {
		t.Fatalf("tasks %+v, answer %q", tasks, res.ExternalID)
	}
	m.ExternalID = res.ExternalID
	if got, _, err := c.Poll(context.Background(), m); got != herald.PollPending || err != nil {
		t.Fatalf("poll of a processing task: %v, %v", got, err)
	}
	clk.Advance(20 * time.Second)
	if got, _, err := c.Poll(context.Background(), m); got != herald.PollSucceeded || err != nil {
		t.Fatalf("poll of a done task: %v, %v", got, err)
	}
	if n := len(calls(s, "/API/User/Login")); n != 1 {
		t.Errorf("%d logins, want 1", n)
	}
}

// TestV2CommandsAndTheirFields: control, setting and token reach their
// endpoints; a token task's data is the token, with protocolId 30000.
func TestV2CommandsAndTheirFields(t *testing.T) {
	clk := clock.NewFake(t0)
	s, url := startSim(t, calinsim.Config{API: calinsim.V2}, clk, nil)
	c := newV2(t, url, clk)
	for _, m := range []*herald.Message{
		msg("1", "command=control", "protocol_id=20001"),
		msg("2", "command=setting", "protocol_id=10000", "data=2026-08-05 00:00:00", "customer_id=c-9"),
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
	if len(tasks) != 3 || tasks[0].Kind != calinsim.KindControl || tasks[0].ProtocolID != 20001 ||
		tasks[1].Kind != calinsim.KindWrite || tasks[1].Data != "2026-08-05 00:00:00" ||
		tasks[2].Kind != calinsim.KindToken || tasks[2].Token != "12345678901234567890" || tasks[2].ProtocolID != V2ProtocolToken {
		t.Fatalf("tasks %+v", tasks)
	}
}

// TestV2FailedTaskAndRejectedToken: status 2 and 3 (a rejected token)
// end the task: delivered, with the execution's failure and its reason
// as the result. With RetryFailedTasks, status 2 is a transient failure
// with a reason, status 3 a permanent one.
func TestV2FailedTaskAndRejectedToken(t *testing.T) {
	clk := clock.NewFake(t0)
	for _, c := range []struct {
		cfg    calinsim.Config
		params []string
		reason string // of the execution's failure
		detail string // of the error, retrying failed tasks
		perm   bool
	}{
		{calinsim.Config{API: calinsim.V2, FailRate: 1}, []string{"command=control", "protocol_id=20000"}, reasonExecutionFailed, "status 2", false},
		{calinsim.Config{API: calinsim.V2, TokenRejectRate: 1}, []string{"command=token", "token=11112222333344445555"}, reasonTokenRejected, "status 3", true},
	} {
		_, url := startSim(t, c.cfg, clk, nil)
		for _, retry := range []bool{false, true} {
			cr := newV2(t, url, clk, func(c *V2Config) { c.RetryFailedTasks = retry })
			m := msg("58001", c.params...)
			res, err := cr.Send(context.Background(), m)
			if err != nil {
				t.Fatal(err)
			}
			m.ExternalID = res.ExternalID
			got, result, err := cr.Poll(context.Background(), m)
			switch {
			case !retry && (got != herald.PollSucceeded || err != nil || result[ResultExecution] != ExecFailure || result[ResultReason] != c.reason):
				t.Fatalf("%s: %v, %v, %v; want PollSucceeded with the execution's failure %q", c.detail, got, result, err, c.reason)
			case retry && (got != herald.PollFailed || err == nil || isPermanent(err) != c.perm || !strings.Contains(err.Error(), c.detail)):
				t.Fatalf("%s, retrying failed tasks: %v, %v; want PollFailed, permanent %v", c.detail, got, err, c.perm)
			}
		}
	}
}

// TestV2UnknownTaskFailsPermanently: a poll answered with a code other
// than 0, "task … does not exist", fails at once with the vendor's reason.
func TestV2UnknownTaskFailsPermanently(t *testing.T) {
	clk := clock.NewFake(t0)
	_, url := startSim(t, calinsim.Config{API: calinsim.V2}, clk, nil)
	c := newV2(t, url, clk)
	m := msg("58001", "command=reading", "protocol_id=39")
	m.ExternalID = "4242"
	got, _, err := c.Poll(context.Background(), m)
	if got != herald.PollFailed || !isPermanent(err) || !strings.Contains(err.Error(), `"task 4242 does not exist"`) {
		t.Fatalf("poll of an unknown task: %v, %v; want PollFailed, permanent, with the vendor's reason", got, err)
	}
}

// TestV2ExpiredTokenOne401OneLogin: a token the API expired answers 401;
// the carrier logs in once more and the call succeeds.
func TestV2ExpiredTokenOne401OneLogin(t *testing.T) {
	clk := clock.NewFake(t0)
	s, url := startSim(t, calinsim.Config{API: calinsim.V2}, clk, nil)
	c := newV2(t, url, clk)
	m := msg("58001", "command=reading", "protocol_id=39")
	res, err := c.Send(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	s.ExpireTokens()
	m.ExternalID = res.ExternalID
	if got, _, err := c.Poll(context.Background(), m); got != herald.PollSucceeded || err != nil {
		t.Fatalf("poll after the token expired: %v, %v", got, err)
	}
	gets := calls(s, "GetReadingTask")
	if n := len(calls(s, "/API/User/Login")); n != 2 || len(gets) != 2 || gets[0].Status != http.StatusUnauthorized || gets[1].Status != http.StatusOK {
		t.Fatalf("%d logins, polls %+v; want 2 logins, a 401 then a 200", n, gets)
	}
	s.ExpireTokens() // a create answered 401 is sent again: it created nothing
	if _, err := c.Send(context.Background(), msg("58002", "command=reading", "protocol_id=39")); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Tasks()); n != 2 {
		t.Errorf("%d tasks, want 2", n)
	}
}

// TestV2TokenRenewedBeforeItExpires: a token within tokenSkew of its JWT
// expiry is renewed before the call, without a 401.
func TestV2TokenRenewedBeforeItExpires(t *testing.T) {
	clk := clock.NewFake(t0)
	s, url := startSim(t, calinsim.Config{API: calinsim.V2, TokenTTL: time.Minute}, clk, nil)
	c := newV2(t, url, clk)
	if _, err := c.Send(context.Background(), msg("58001", "command=reading", "protocol_id=39")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(45 * time.Second)
	if _, err := c.Send(context.Background(), msg("58002", "command=reading", "protocol_id=39")); err != nil {
		t.Fatal(err)
	}
	for _, call := range s.Calls() {
		if call.Status == http.StatusUnauthorized {
			t.Fatalf("a 401: %+v", call)
		}
	}
	if n := len(calls(s, "/API/User/Login")); n != 2 {
		t.Errorf("%d logins, want 2", n)
	}
}

// TestV2TwoUnauthorizedInARowIsAClearTransientError: when the API answers
// 401 to a fresh token too, the call fails with a clear error that is
// retried later, after exactly one more login.
func TestV2TwoUnauthorizedInARowIsAClearTransientError(t *testing.T) {
	clk := clock.NewFake(t0)
	var refuse atomic.Bool
	s, url := startSim(t, calinsim.Config{API: calinsim.V2}, clk, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if refuse.Load() && strings.Contains(r.URL.Path, "RemoteMeterTask") {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	c := newV2(t, url, clk)
	m := msg("58001", "command=reading", "protocol_id=39")
	res, err := c.Send(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	refuse.Store(true)
	m.ExternalID = res.ExternalID
	got, _, err := c.Poll(context.Background(), m)
	if got != herald.PollPending || err == nil || isPermanent(err) || !strings.Contains(err.Error(), "401 Unauthorized again after a fresh login") {
		t.Fatalf("two 401s: %v, %v; want a clear poll error", got, err)
	}
	if n := len(calls(s, "/API/User/Login")); n != 2 {
		t.Errorf("%d logins, want 2 (the first, and one after the 401)", n)
	}
	var marks []string
	_, err = c.SendResumable(context.Background(), msg("58002", "command=reading", "protocol_id=39"), func(id string) error { marks = append(marks, id); return nil })
	if err == nil || isPermanent(err) || !strings.Contains(err.Error(), "401") || marks[len(marks)-1] != "calin:not-created:1" {
		t.Fatalf("create answered 401 twice: %v, marks %q; want transient, not created", err, marks)
	}
}

// TestV2LoginRefused: wrong credentials are a transient error naming the
// vendor's reason, and nothing is created.
func TestV2LoginRefused(t *testing.T) {
	clk := clock.NewFake(t0)
	s, url := startSim(t, calinsim.Config{API: calinsim.V2}, clk, nil)
	c := newV2(t, url, clk, func(c *V2Config) { c.Password = "not-this-one" })
	_, err := c.Send(context.Background(), msg("58001", "command=reading", "protocol_id=39"))
	if err == nil || isPermanent(err) || !strings.Contains(err.Error(), "login: refused, no token: code 1") || strings.Contains(err.Error(), "not-this-one") {
		t.Fatalf("refused login: %v", err)
	}
	if len(s.Tasks()) != 0 || len(calls(s, "CreateReadingTask")) != 0 {
		t.Error("a task call after a refused login")
	}
}

// TestV2PollSendsTheIDAsANumber: as the client does (Number(id)).
func TestV2PollSendsTheIDAsANumber(t *testing.T) {
	clk := clock.NewFake(t0)
	var body atomic.Value
	_, url := startSim(t, calinsim.Config{API: calinsim.V2}, clk, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "GetReadingTask") {
				b, _ := io.ReadAll(r.Body)
				body.Store(string(b))
				r.Body = io.NopCloser(strings.NewReader(string(b)))
			}
			h.ServeHTTP(w, r)
		})
	})
	c := newV2(t, url, clk)
	m := msg("58001", "command=reading", "protocol_id=39")
	res, err := c.Send(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	m.ExternalID = res.ExternalID
	if _, _, err := c.Poll(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(body.Load().(string)), &got); err != nil {
		t.Fatal(err)
	}
	if _, isNumber := got["id"].(float64); !isNumber || got["lang"] != "en" || got["company"] != calinsim.DefaultCompany {
		t.Errorf("poll body %v", got)
	}
}

// TestV2Validate: the target and each command's params.
func TestV2Validate(t *testing.T) {
	c, err := NewV2(V2Config{BaseURL: "http://127.0.0.1:1", Company: "a", UserID: "b", Password: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, ok := range []*herald.Message{
		msg("58001", "command=reading", "protocol_id=39", "customer_id=c"),
		msg("58001", "command=control", "protocol_id=20000", "customer_id=c"),
		msg("58001", "command=setting", "protocol_id=10000", "data=2026-08-05 00:00:00", "customer_id=c"),
		msg("58001", "command=token", "token=1", "customer_id=c"),
	} {
		if err := c.Validate(ok); err != nil {
			t.Errorf("%v: %v", ok.Params, err)
		}
	}
	for _, bad := range []struct {
		m     *herald.Message
		field string
	}{
		{msg("58001", "command=reading", "protocol_id=39"), "params.customer_id"},
		{msg("58001", "command=write", "protocol_id=10000", "customer_id=c"), "params.command"},
		{msg("58001", "command=reading", "customer_id=c"), "params.protocol_id"},
		{msg("58001", "command=reading", "protocol_id=x39", "customer_id=c"), "params.protocol_id"},
		{msg("58001", "command=reading", "protocol_id=-1", "customer_id=c"), "params.protocol_id"},
		{msg("58001", "command=setting", "protocol_id=10000", "customer_id=c"), "params.data"},
		{msg("58001", "command=control", "protocol_id=20000", "data=1", "customer_id=c"), "params.data"},
		{msg("58001", "command=token", "customer_id=c"), "params.token"},
		{msg("58001", "command=token", "token=1", "data_item=x", "customer_id=c"), "params"},
	} {
		err := c.Validate(bad.m)
		var inv *herald.InvalidError
		if !errors.As(err, &inv) || inv.Field != bad.field {
			t.Errorf("%v: %v, want an invalid %s", bad.m.Params, err, bad.field)
		}
	}
}
