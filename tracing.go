package herald

import "context"

// Tracer follows messages through the engine for a tracing system: package
// otelx implements it with OpenTelemetry. The engine calls it only when
// Config.Tracer is set; without one, nothing is traced and nothing is
// spent on it. Its methods must be safe for concurrent use and must not
// block.
type Tracer interface {
	// TraceParent returns the W3C traceparent of the span of ctx, the
	// context Engine.Send was called with (the API request's), or ""
	// when it has none. Send keeps it with the new message
	// (Message.TraceParent), so that the message's carrier calls, on
	// whichever node, continue that trace.
	TraceParent(ctx context.Context) string
	// Sent tells the span of ctx which message Engine.Send returned:
	// created is false for an earlier message returned instead of a new
	// one (an idempotent repeat, a duplicate).
	Sent(ctx context.Context, m *Message, created bool)
	// Call starts the span of one carrier call for m (op is CallSend,
	// CallPoll or CallQueueCheck), in the trace of m.TraceParent when it
	// has one. The carrier gets the context returned, which carries the
	// span (a webhook sends it on as its traceparent header). end is
	// called once with what the call came to: its outcome (send:
	// accepted, retry, failed, backpressure, stopped, route_removed,
	// expired; poll: pending, succeeded, retry, failed, error; queue
	// check: queued, not_queued, error), the status the message moves to
	// ("" when it stays or is unknown) and the error, if any.
	Call(ctx context.Context, op string, m *Message) (_ context.Context, end func(outcome string, to Status, err error))
}

// The carrier calls a Tracer is told about.
const (
	CallSend       = "send"        // Carrier.Send or Resumer.SendResumable
	CallPoll       = "poll"        // Poller.Poll
	CallQueueCheck = "check_queue" // QueueChecker.StillQueued
)

// The outcomes of carrier calls a Tracer is told.
const (
	callAccepted     = "accepted"     // send: the carrier took the message
	callRetry        = "retry"        // send, poll: failed, to be retried
	callFailed       = "failed"       // send, poll: failed for good
	callBackpressure = "backpressure" // send: the carrier asked to wait
	callStopped      = "stopped"      // send: unanswered, the engine is stopping
	callRemoved      = "route_removed"
	callExpired      = "expired"
	callPending      = "pending"   // poll: the task runs on
	callSucceeded    = "succeeded" // poll: the task finished
	callError        = "error"     // poll, queue check: the call itself failed
	callQueued       = "queued"    // queue check: still in the carrier's queue
	callNotQueued    = "not_queued"
)

// nopEnd is the end of a call that is not traced.
func nopEnd(string, Status, error) {}

// startCall starts the span of a carrier call for m when the engine has a
// Tracer; otherwise it returns ctx and an end that does nothing.
func (e *Engine) startCall(ctx context.Context, op string, m *Message) (context.Context, func(string, Status, error)) {
	if e.cfg.Tracer == nil {
		return ctx, nopEnd
	}
	return e.cfg.Tracer.Call(ctx, op, m)
}

// tracedSend is send, within the span of the carrier call when the engine
// has a Tracer.
func (e *Engine) tracedSend(m *Message) (Transition, bool, sendOutcome) {
	if e.cfg.Tracer == nil {
		return e.send(e.sendCtx, m)
	}
	ctx, end := e.cfg.Tracer.Call(e.sendCtx, CallSend, m)
	t, ok, outcome := e.send(ctx, m)
	end(sendCallOutcome(t, ok), t.To, transitionError(t))
	return t, ok, outcome
}

// sendCallOutcome names what a send came to, from the transition that
// records it.
func sendCallOutcome(t Transition, ok bool) string {
	switch {
	case !ok:
		return callStopped
	case t.Reason == "backpressure":
		return callBackpressure
	case t.Reason == "route removed":
		return callRemoved
	case t.Reason == "expired":
		return callExpired
	case t.To == StatusToRetry:
		return callRetry
	case t.To == StatusDeliveryFailed:
		return callFailed
	default:
		return callAccepted
	}
}

// transitionError is the error a transition records, nil when none.
func transitionError(t Transition) error {
	if t.LastError == "" {
		return nil
	}
	return lastError(t.LastError)
}

// lastError is a carrier call's error as a transition keeps it: its text.
type lastError string

func (e lastError) Error() string { return string(e) }

// pollCallOutcome names what a poll came to.
func pollCallOutcome(res PollResult, err error, t Transition) string {
	switch {
	case res == PollFailed && t.To == StatusToRetry:
		return callRetry
	case res == PollFailed:
		return callFailed
	case err != nil:
		return callError
	case res == PollSucceeded:
		return callSucceeded
	default:
		return callPending
	}
}

// queueCallOutcome names what a queue check came to.
func queueCallOutcome(queued bool, err error) string {
	switch {
	case err != nil:
		return callError
	case queued:
		return callQueued
	default:
		return callNotQueued
	}
}

// traceSend keeps the trace context of ctx with m, a message Send is about
// to store, when the engine has a Tracer.
func (e *Engine) traceSend(ctx context.Context, m *Message) {
	if e.cfg.Tracer != nil {
		m.TraceParent = e.cfg.Tracer.TraceParent(ctx)
	}
}

// traceSent tells the Tracer, if any, which message Send returned.
func (e *Engine) traceSent(ctx context.Context, m *Message, created bool) {
	if e.cfg.Tracer != nil {
		e.cfg.Tracer.Sent(ctx, m, created)
	}
}

// callStatus is the status a call's transition t moves m to, "" when it
// stays.
func callStatus(m *Message, t Transition) Status {
	if t.To == m.Status {
		return ""
	}
	return t.To
}
