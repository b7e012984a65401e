package calin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heraldmq/herald"
)

// DefaultCreateTimeout bounds a create-task call when the config sets no
// CreateTimeout: far above the vendor's slowest observed answer (37 s) and
// the 20 s accept timeout, so that a slow call is waited for rather than
// cut short, since cutting it short is what leaves a task in doubt.
const DefaultCreateTimeout = 2 * time.Minute

// keepCalls is how long a finished create call is remembered for the
// message's retry to take its task.
const keepCalls = 15 * time.Minute

// callSlack is how much longer than its create call a send may take: the
// login before it (V2), and the mark.
const callSlack = 30 * time.Second

// The marks a send keeps as the message's external id while it has no
// task id (see the package comment): "calin:creating:<attempt>" before the
// create call of that attempt, "calin:not-created:<attempt>" once the
// vendor answered that it created nothing.
const (
	markCreating   = "calin:creating:"
	markNotCreated = "calin:not-created:"
)

// isMark reports whether an external id is one of the marks rather than a
// task id.
func isMark(externalID string) bool { return strings.HasPrefix(externalID, "calin:") }

// creatingAttempt returns the attempt of a "calin:creating:" mark.
func creatingAttempt(externalID string) (int, bool) {
	s, ok := strings.CutPrefix(externalID, markCreating)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// creator runs the create-task calls of one carrier so that a message
// creates at most one task: it marks the message before each call, lets a
// call that outlives its send go on (up to the create timeout), and gives
// its task to the message's retry. It is safe for concurrent use.
type creator struct {
	version string
	timeout time.Duration

	ctx    context.Context // ended by close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	calls  map[callKey]*createCall
	pruned time.Time
}

// callKey names the create call of a message's attempt.
type callKey struct {
	id      string
	attempt int
}

// createCall is one create-task call, running or finished.
type createCall struct {
	done   chan struct{} // closed when it ended
	ended  time.Time     // wall time; set before done closes
	taskID string
	err    error
}

func newCreator(version string, timeout time.Duration) *creator {
	if timeout <= 0 {
		timeout = DefaultCreateTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &creator{version: version, timeout: timeout, ctx: ctx, cancel: cancel, calls: map[callKey]*createCall{}}
}

// callTimeout is the bound of a send: the create call's and callSlack.
func (cr *creator) callTimeout() time.Duration { return cr.timeout + callSlack }

// close ends the calls still running and waits for them.
func (cr *creator) close() {
	cr.cancel()
	cr.wg.Wait()
}

// send creates the task of m (attempt m.Attempt) with create, once:
//
//   - m's external id marks a create call of an earlier attempt that may
//     have created a task: the task that call got is taken when this
//     process made it and it has ended (waiting for it while ctx lasts); a
//     call that created nothing lets this attempt create; otherwise the
//     message fails permanently, in doubt, and no second task is created;
//   - before its own call, send makes the mark durable through progress,
//     and creates nothing when that fails;
//   - send waits for its call, which the create timeout bounds: the
//     engine keeps the message's claim alive meanwhile (callTimeout, a
//     herald.SlowCaller's), so a slow create ends in one task and one
//     delivery;
//   - a call still running when ctx ends (herald stops) goes on in the
//     background, up to the create timeout, for the retry on this node to
//     take its task.
func (cr *creator) send(ctx context.Context, m *herald.Message, t task, progress func(string) error, create func(context.Context) (string, error)) (herald.SendResult, error) {
	prefix := fmt.Sprintf("%s: %s", cr.version, t.describe())
	if n, ok := creatingAttempt(m.ExternalID); ok && n < m.Attempt {
		c := cr.call(m.ID, n)
		if c == nil {
			return herald.SendResult{}, herald.Permanent(fmt.Errorf("%s: %s", prefix, doubtText(n,
				"herald has no record of how it ended: it restarted since, or another node made the call")))
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			return herald.SendResult{}, fmt.Errorf("%s: the create-task call of attempt %d is still waiting for its answer; the next try takes the task it creates", prefix, n)
		}
		switch {
		case c.err == nil:
			return herald.SendResult{ExternalID: c.taskID}, nil // the task that call created
		case inDoubt(c.err):
			return herald.SendResult{}, herald.Permanent(fmt.Errorf("%s: %s", prefix, doubtText(n, c.err.Error())))
		}
		// That call created nothing: this attempt creates the task.
	}
	c := cr.register(m.ID, m.Attempt) // before the mark: a retry that sees the mark finds the call
	if err := progress(markCreating + strconv.Itoa(m.Attempt)); err != nil {
		cr.end(c, "", fmt.Errorf("not created: %w", err))
		return herald.SendResult{}, err
	}
	cr.start(c, create)
	select {
	case <-c.done:
	case <-ctx.Done():
		return herald.SendResult{}, fmt.Errorf("%s: the send ended before the create-task call answered; the call goes on for up to %v, and a retry on this node takes the task it creates instead of creating another", prefix, cr.timeout)
	}
	switch {
	case c.err == nil:
		return herald.SendResult{ExternalID: c.taskID}, nil
	case inDoubt(c.err):
		return herald.SendResult{}, herald.Permanent(fmt.Errorf("%s: %s", prefix, doubtText(m.Attempt, c.err.Error())))
	}
	// The vendor created nothing: say so, so that a retry creates the task.
	// Should the mark fail, this process still remembers the call.
	_ = progress(markNotCreated + strconv.Itoa(m.Attempt))
	return herald.SendResult{}, fmt.Errorf("%s: %w", prefix, c.err)
}

// doubtText explains a message failed because attempt's create call may
// have created a task herald does not know.
func doubtText(attempt int, why string) string {
	return fmt.Sprintf("the create-task call of attempt %d may have created a task whose id herald never got (%s); "+
		"herald creates no second one: check the meter's tasks with the vendor, then replay the message to create it again", attempt, why)
}

// call returns the create call of message id's attempt, or nil when this
// process has none.
func (cr *creator) call(id string, attempt int) *createCall {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return cr.calls[callKey{id, attempt}]
}

// register records a create call of message id's attempt, not begun.
func (cr *creator) register(id string, attempt int) *createCall {
	c := &createCall{done: make(chan struct{})}
	cr.mu.Lock()
	defer cr.mu.Unlock()
	cr.pruneLocked(time.Now())
	cr.calls[callKey{id, attempt}] = c
	return c
}

// start runs create for c in the background, bounded by the create
// timeout and by close. create returns a *doubtError when its call may
// have created a task it has no id for.
func (cr *creator) start(c *createCall, create func(context.Context) (string, error)) {
	cr.wg.Add(1)
	go func() {
		defer cr.wg.Done()
		ctx, cancel := context.WithTimeout(cr.ctx, cr.timeout)
		defer cancel()
		taskID, err := create(ctx)
		if err == nil && taskID == "" {
			err = &doubtError{errors.New("the vendor answered without a task id")}
		}
		cr.end(c, taskID, err)
	}()
}

// end records how c ended.
func (cr *creator) end(c *createCall, taskID string, err error) {
	c.taskID, c.err, c.ended = taskID, err, time.Now()
	close(c.done)
}

// pruneLocked forgets the calls that ended keepCalls ago, at most once a
// minute. cr.mu is held.
func (cr *creator) pruneLocked(now time.Time) {
	if now.Sub(cr.pruned) < time.Minute {
		return
	}
	cr.pruned = now
	for k, c := range cr.calls {
		select {
		case <-c.done:
			if now.Sub(c.ended) > keepCalls {
				delete(cr.calls, k)
			}
		default:
		}
	}
}
