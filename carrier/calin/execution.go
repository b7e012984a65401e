package calin

import (
	"errors"

	"github.com/heraldmq/herald"
)

// The keys and values of the result of a task that ended (Message.Result).
const (
	ResultExecution = "execution" // success or failure: how the meter carried the command out
	ResultReason    = "reason"    // a failure's reason, as the vendor gives it
	ExecSuccess     = "success"
	ExecFailure     = "failure"
)

// The reasons of an execution failure when the vendor gives none (the
// reference client's words).
const (
	reasonExecutionFailed = "Delivery was successful but execution of the command failed"
	reasonTokenRejected   = "The token was rejected, possibly already delivered"
)

// executionError is a poll's answer that the task ended and the meter
// received the command, but did not carry it out (V1 Result.Status False,
// V2 status 2, or 3: a rejected token).
type executionError struct {
	reason   string // the vendor's reason, or the reference client's words
	detail   string // what of the answer said so: "Result.Status False", "status 2"
	rejected bool   // the meter rejected a token: delivering it again cannot succeed
}

func (e *executionError) Error() string {
	return "the task failed: " + e.reason + " (" + e.detail + ")"
}

// pollOutcome is what a carrier's Poll answers for the parsed answer of a
// poll (res, err): a task that ended, executed or not, is delivered, its
// execution the result (herald.Poller); with retryFailed, an execution
// that failed is a failed task instead (retried with a new task, but a
// rejected token, which fails at once).
func pollOutcome(res herald.PollResult, err error, retryFailed bool) (herald.PollResult, map[string]string, error) {
	var ex *executionError
	switch {
	case res == herald.PollSucceeded:
		return res, map[string]string{ResultExecution: ExecSuccess}, nil
	case !errors.As(err, &ex):
		return res, nil, err
	case !retryFailed:
		return herald.PollSucceeded, map[string]string{ResultExecution: ExecFailure, ResultReason: ex.reason}, nil
	case ex.rejected:
		return herald.PollFailed, nil, herald.Permanent(err)
	}
	return herald.PollFailed, nil, err
}
