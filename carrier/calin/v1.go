package calin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/heraldmq/herald"
)

// V1Config describes one Calin API V1 account.
type V1Config struct {
	// BaseURL is the API's address; the endpoints (/COMM_RemoteReading, …)
	// are under it. Required.
	BaseURL string
	// Company, Username and Password are the account's CompanyName,
	// UserName and Password, sent in every body. Required. The password
	// appears in no error text.
	Company  string
	Username string
	Password string
	// Client sends the requests; nil means httpsend.NewClient (connection
	// reuse, no redirects). The carrier relies on contexts for time limits.
	Client *http.Client
	// CreateTimeout bounds a create-task call, which may outlive the send
	// that began it (see the package comment). Defaults to
	// DefaultCreateTimeout.
	CreateTimeout time.Duration
	// RetryFailedTasks retries a task the meter did not carry out with a
	// new task (a rejected token fails at once). By default such a task
	// delivers its message, with the execution's failure as its result.
	RetryFailedTasks bool
	// Now tells the time for Retry-After dates; nil means time.Now.
	Now func() time.Time
}

// V1 is the calin-v1 carrier: a pull carrier that creates one V1 COMM task
// per message and polls it. It is safe for concurrent use.
type V1 struct {
	w           wire
	creds       v1Creds
	creator     *creator
	retryFailed bool
}

var (
	_ herald.Resumer      = (*V1)(nil)
	_ herald.Poller       = (*V1)(nil)
	_ herald.Carrier      = (*V1)(nil)
	_ herald.LaneRequirer = (*V1)(nil)
)

// v1Creds are the credentials of every V1 body.
type v1Creds struct {
	company, user, password string
}

// v1Endpoints are the create and poll paths of each V1 command.
var v1Endpoints = map[string]struct{ create, poll string }{
	CommandReading: {"/COMM_RemoteReading", "/COMM_RemoteReadingTask"},
	CommandControl: {"/COMM_RemoteControl", "/COMM_RemoteControlTask"},
	CommandWrite:   {"/COMM_RemoteWrite", "/COMM_RemoteWriteTask"},
	CommandToken:   {"/COMM_RemoteToken", "/COMM_RemoteTokenTask"},
}

// v1Params are the params each V1 command takes.
var v1Params = map[string][]string{
	CommandReading: {ParamDataItem},
	CommandControl: {ParamDataItem},
	CommandWrite:   {ParamDataItem, ParamData},
	CommandToken:   {ParamToken},
}

// NewV1 checks c and returns a carrier for it.
func NewV1(c V1Config) (*V1, error) {
	switch {
	case c.Company == "":
		return nil, errors.New("calin-v1: the company is empty")
	case c.Username == "":
		return nil, errors.New("calin-v1: the user name is empty (username_env)")
	case c.Password == "":
		return nil, errors.New("calin-v1: the password is empty (password_env)")
	}
	w, err := newWire("calin-v1", c.BaseURL, c.Client, c.Now, c.Password)
	if err != nil {
		return nil, err
	}
	return &V1{w: w, creds: v1Creds{c.Company, c.Username, c.Password}, creator: newCreator("calin-v1", c.CreateTimeout),
		retryFailed: c.RetryFailedTasks}, nil
}

// Path returns herald.PathPull: an accepted message is a task, polled
// until it ends.
func (c *V1) Path() herald.Path { return herald.PathPull }

// Validate checks a message: the target is the meter number, and
// params.command with its params (see the package comment).
func (c *V1) Validate(m *herald.Message) error {
	_, err := v1Task(m)
	return err
}

// v1Task reads the task a message asks for.
func v1Task(m *herald.Message) (task, error) {
	t, err := readParams(m, "calin-v1", []string{CommandReading, CommandControl, CommandWrite, CommandToken}, v1Params)
	if err != nil {
		return t, err
	}
	switch t.command {
	case CommandReading:
		err = require(m, ParamDataItem, `the DataItem to read ("Current Credit Register", "Voltage", "Power", "Current", "Version", "Date", …)`)
	case CommandControl:
		err = require(m, ParamDataItem, `"Switch On" or "Switch Off"`)
	case CommandWrite:
		if err = require(m, ParamDataItem, `the DataItem to write ("Date")`); err == nil {
			err = require(m, ParamData, `the value to write ("Date": yymmddww)`)
		}
	case CommandToken:
		err = require(m, ParamToken, "the token to deliver to the meter")
	}
	t.dataItem, t.data, t.token = m.Params[ParamDataItem], m.Params[ParamData], m.Params[ParamToken]
	return t, err
}

// RequiredLane says what a message's lane is (herald.LaneRequirer): its
// meter's DCU, whose tasks the route's admission bounds.
func (c *V1) RequiredLane() string { return requiredLane }

// CallTimeout bounds a send: the create call's own bound and a little
// more, so that the engine keeps the message's claim alive while a slow
// create call runs (herald.SlowCaller).
func (c *V1) CallTimeout() time.Duration { return c.creator.callTimeout() }

// Send creates m's task; see SendResumable.
func (c *V1) Send(ctx context.Context, m *herald.Message) (herald.SendResult, error) {
	return c.SendResumable(ctx, m, func(string) error { return nil })
}

// SendResumable creates m's task and returns its TaskNo as the external
// id, creating at most one task per message (see the package comment):
// progress makes the mark that a create call begins durable before it.
func (c *V1) SendResumable(ctx context.Context, m *herald.Message, progress func(externalID string) error) (herald.SendResult, error) {
	t, err := v1Task(m)
	if err != nil {
		return herald.SendResult{}, herald.Permanent(fmt.Errorf("calin-v1: %w", err))
	}
	return c.creator.send(ctx, m, t, progress, func(ctx context.Context) (string, error) {
		return c.create(ctx, t)
	})
}

// create makes the task with one call and returns its TaskNo.
func (c *V1) create(ctx context.Context, t task) (string, error) {
	path := v1Endpoints[t.command].create
	body := c.body(map[string]string{"MeterNo": t.meter})
	if t.command == CommandToken {
		body["Token"] = t.token
	} else {
		body["DataItem"] = t.dataItem
	}
	if t.command == CommandWrite {
		body["Data"] = t.data
	}
	a, err := c.w.post(ctx, path, body, "")
	if err == nil {
		var id string
		if id, err = c.w.parseV1Create(a); err == nil {
			return id, nil
		}
	}
	return "", fmt.Errorf("%s: %w", path[1:], err)
}

// Poll asks how m's task is doing: Result.Status null or "unknown" is
// pending, "True" done, "False" done with the execution's failure as the
// result (or, with RetryFailedTasks, failed and retried); ResultCode
// "99", a rejected token, and an answer without the task fail at once.
func (c *V1) Poll(ctx context.Context, m *herald.Message) (herald.PollResult, map[string]string, error) {
	t, err := v1Task(m)
	if err != nil {
		return herald.PollPending, nil, fmt.Errorf("calin-v1: %w", err)
	}
	if m.ExternalID == "" || isMark(m.ExternalID) {
		return herald.PollPending, nil, fmt.Errorf("calin-v1: %s: no task id to poll (external id %q)", t.describe(), m.ExternalID)
	}
	path := v1Endpoints[t.command].poll
	a, err := c.w.post(ctx, path, c.body(map[string]string{"TaskNo": m.ExternalID}), "")
	res := herald.PollPending
	if err == nil {
		res, err = c.w.parseV1Result(a)
	}
	if err != nil {
		err = fmt.Errorf("calin-v1: task %s (%s): %s: %w", m.ExternalID, t.describe(), path[1:], err)
	}
	return pollOutcome(res, err, c.retryFailed)
}

// body returns fields with the account's credentials added.
func (c *V1) body(fields map[string]string) map[string]string {
	fields["CompanyName"], fields["UserName"], fields["Password"] = c.creds.company, c.creds.user, c.creds.password
	return fields
}

// Close ends the create calls still running (their messages' retries then
// fail in doubt) and waits for them.
func (c *V1) Close() error {
	c.creator.close()
	return nil
}
