package calin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/heraldmq/herald"
)

// V2Config describes one Calin API V2 account.
type V2Config struct {
	// BaseURL is the API's address; the endpoints (/API/User/Login,
	// /API/RemoteMeterTask/…) are under it. Required.
	BaseURL string
	// Company, UserID and Password log in (company, userId, password);
	// Company is also sent with every task. Required. The password and the
	// bearer tokens appear in no error text.
	Company  string
	UserID   string
	Password string
	// CustomerID is the customerId of a message without
	// params.customer_id; empty makes that param required.
	CustomerID string
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
	// Now tells the time for the bearer token's expiry and Retry-After
	// dates; nil means time.Now.
	Now func() time.Time
}

// V2 is the calin-v2 carrier: a pull carrier that creates one V2 remote
// meter task per message and polls it, logged in with a bearer token. It
// is safe for concurrent use.
type V2 struct {
	w           wire
	company     string
	customerID  string
	session     *session
	creator     *creator
	retryFailed bool
}

var (
	_ herald.Resumer      = (*V2)(nil)
	_ herald.Poller       = (*V2)(nil)
	_ herald.Carrier      = (*V2)(nil)
	_ herald.LaneRequirer = (*V2)(nil)
)

// v2Endpoints are the create and poll paths of each V2 command.
var v2Endpoints = map[string]struct{ create, poll string }{
	CommandReading: {"/API/RemoteMeterTask/CreateReadingTask", "/API/RemoteMeterTask/GetReadingTask"},
	CommandControl: {"/API/RemoteMeterTask/CreateControlTask", "/API/RemoteMeterTask/GetControlTask"},
	CommandSetting: {"/API/RemoteMeterTask/CreateSettingTask", "/API/RemoteMeterTask/GetSettingTask"},
	CommandToken:   {"/API/RemoteMeterTask/CreateTokenTask", "/API/RemoteMeterTask/GetTokenTask"},
}

// v2Params are the params each V2 command takes.
var v2Params = map[string][]string{
	CommandReading: {ParamProtocolID, ParamCustomerID},
	CommandControl: {ParamProtocolID, ParamCustomerID},
	CommandSetting: {ParamProtocolID, ParamData, ParamCustomerID},
	CommandToken:   {ParamToken, ParamProtocolID, ParamCustomerID},
}

// NewV2 checks c and returns a carrier for it.
func NewV2(c V2Config) (*V2, error) {
	switch {
	case c.Company == "":
		return nil, errors.New("calin-v2: the company is empty")
	case c.UserID == "":
		return nil, errors.New("calin-v2: the user id is empty (user_id_env)")
	case c.Password == "":
		return nil, errors.New("calin-v2: the password is empty (password_env)")
	}
	w, err := newWire("calin-v2", c.BaseURL, c.Client, c.Now, c.Password)
	if err != nil {
		return nil, err
	}
	return &V2{
		w: w, company: c.Company, customerID: c.CustomerID,
		session:     newSession(w, c.UserID, c.Password, c.Company),
		creator:     newCreator("calin-v2", c.CreateTimeout),
		retryFailed: c.RetryFailedTasks,
	}, nil
}

// Path returns herald.PathPull: an accepted message is a task, polled
// until it ends.
func (c *V2) Path() herald.Path { return herald.PathPull }

// Validate checks a message: the target is the meter id, and
// params.command with its params (see the package comment).
func (c *V2) Validate(m *herald.Message) error {
	_, err := c.task(m)
	return err
}

// task reads the task a message asks for.
func (c *V2) task(m *herald.Message) (task, error) {
	t, err := readParams(m, "calin-v2", []string{CommandReading, CommandControl, CommandSetting, CommandToken}, v2Params)
	if err != nil {
		return t, err
	}
	t.data, t.token, t.customerID = m.Params[ParamData], m.Params[ParamToken], m.Params[ParamCustomerID]
	if t.customerID == "" {
		t.customerID = c.customerID
	}
	switch t.command {
	case CommandToken:
		if err := require(m, ParamToken, "the token to deliver to the meter"); err != nil {
			return t, err
		}
		t.protocolID = V2ProtocolToken
	case CommandSetting:
		if err := require(m, ParamData, `the value to set ("YYYY-MM-DD HH:mm:ss" for the clock, 10000)`); err != nil {
			return t, err
		}
		fallthrough
	default:
		if err := require(m, ParamProtocolID, "the task's protocolId (39 credit, 5 voltage, 20000 relay on, 20001 relay off, 10000 clock, …)"); err != nil {
			return t, err
		}
	}
	if v := m.Params[ParamProtocolID]; v != "" {
		if t.protocolID, err = protocolID(v); err != nil {
			return t, err
		}
	}
	if t.customerID == "" {
		return t, herald.Invalid("params."+ParamCustomerID, "is required: the account's customerId (the route sets none)")
	}
	return t, nil
}

// RequiredLane says what a message's lane is (herald.LaneRequirer): its
// meter's DCU, whose tasks the route's admission bounds.
func (c *V2) RequiredLane() string { return requiredLane }

// CallTimeout bounds a send: the create call's own bound and a little
// more, so that the engine keeps the message's claim alive while a slow
// create call runs (herald.SlowCaller).
func (c *V2) CallTimeout() time.Duration { return c.creator.callTimeout() }

// Send creates m's task; see SendResumable.
func (c *V2) Send(ctx context.Context, m *herald.Message) (herald.SendResult, error) {
	return c.SendResumable(ctx, m, func(string) error { return nil })
}

// SendResumable creates m's task and returns its id as the external id,
// creating at most one task per message (see the package comment):
// progress makes the mark that a create call begins durable before it.
func (c *V2) SendResumable(ctx context.Context, m *herald.Message, progress func(externalID string) error) (herald.SendResult, error) {
	t, err := c.task(m)
	if err != nil {
		return herald.SendResult{}, herald.Permanent(fmt.Errorf("calin-v2: %w", err))
	}
	return c.creator.send(ctx, m, t, progress, func(ctx context.Context) (string, error) {
		return c.create(ctx, t)
	})
}

// v2CreateItem is one element of a create body.
type v2CreateItem struct {
	MeterID    string `json:"meterId"`
	ProtocolID int    `json:"protocolId"`
	Data       string `json:"data,omitempty"`
	CustomerID string `json:"customerId"`
	Company    string `json:"company"`
}

// create makes the task with one call (and a login when needed) and
// returns its id.
func (c *V2) create(ctx context.Context, t task) (string, error) {
	path := v2Endpoints[t.command].create
	item := v2CreateItem{MeterID: t.meter, ProtocolID: t.protocolID, Data: t.data, CustomerID: t.customerID, Company: c.company}
	if t.command == CommandToken {
		item.Data = t.token
	}
	a, err := c.session.post(ctx, path, []v2CreateItem{item})
	if err == nil {
		var id string
		if id, err = c.w.parseV2Create(a); err == nil {
			return id, nil
		}
	}
	return "", fmt.Errorf("%s: %w", path[len("/API/RemoteMeterTask/"):], err)
}

// Poll asks how m's task is doing: status 0 is pending, 1 done, 2 and 3
// (a rejected token) done with the execution's failure as the result (or,
// with RetryFailedTasks, 2 failed and retried, 3 failed at once); an
// answer without the task fails at once.
func (c *V2) Poll(ctx context.Context, m *herald.Message) (herald.PollResult, map[string]string, error) {
	t, err := c.task(m)
	if err != nil {
		return herald.PollPending, nil, fmt.Errorf("calin-v2: %w", err)
	}
	if m.ExternalID == "" || isMark(m.ExternalID) {
		return herald.PollPending, nil, fmt.Errorf("calin-v2: %s: no task id to poll (external id %q)", t.describe(), m.ExternalID)
	}
	path := v2Endpoints[t.command].poll
	body := map[string]any{"id": m.ExternalID, "lang": "en", "company": c.company}
	if n, err := strconv.ParseInt(m.ExternalID, 10, 64); err == nil {
		body["id"] = n // the client sends Number(id)
	}
	a, err := c.session.post(ctx, path, body)
	res := herald.PollPending
	if err == nil {
		res, err = c.w.parseV2Task(a)
	}
	if err != nil {
		err = fmt.Errorf("calin-v2: task %s (%s): %s: %w", m.ExternalID, t.describe(), path[len("/API/RemoteMeterTask/"):], err)
	}
	return pollOutcome(res, err, c.retryFailed)
}

// Close ends the create calls still running (their messages' retries then
// fail in doubt) and waits for them.
func (c *V2) Close() error {
	c.creator.close()
	return nil
}
