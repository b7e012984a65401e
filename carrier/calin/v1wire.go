package calin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/heraldmq/herald"
)

// The V1 ResultCode values the client code knows (calin-api-v1 lib/repo.ts).
const (
	v1ResultOK       = "00" // Reason "OK"
	v1ResultRejected = "99" // Reason "other error": a rejected token
)

// v1Envelope is every V1 answer (CalinApiV1CommResponse). Go matches the
// names without regard to case.
type v1Envelope struct {
	ResultCode *flexString `json:"ResultCode"`
	Reason     flexString  `json:"Reason"`
	Result     *v1Result   `json:"Result"`
}

// v1Result is a task as V1 reports it.
type v1Result struct {
	TaskNo   flexString      `json:"TaskNo"`
	Status   json.RawMessage `json:"Status"` // null while it runs, "True", "False", "unknown"
	DataItem flexString      `json:"DataItem"`
	Data     flexString      `json:"Data"`
}

// decodeV1 reads a V1 answer: an error for one that is not 2xx (with the
// ASP.NET {"Message"} the API answers then) or not the V1 envelope.
func (w wire) decodeV1(a answer) (v1Envelope, error) {
	var env v1Envelope
	if !a.ok() {
		var msg struct {
			Message string `json:"Message"`
		}
		detail := w.quote(a)
		switch {
		case a.isHTML():
			detail = ", an HTML page" + detail
		case json.Unmarshal(a.body, &msg) == nil && strings.TrimSpace(msg.Message) != "":
			detail = ": " + w.clean(msg.Message)
		}
		return env, w.statusError(a, detail)
	}
	switch {
	case a.isHTML():
		return env, fmt.Errorf("%s: an HTML page, not the API's answer%s", statusText(a.status), w.quote(a))
	case a.truncated:
		return env, fmt.Errorf("%s: not the API's answer%s", statusText(a.status), w.quote(a))
	}
	if err := json.Unmarshal(a.body, &env); err != nil || env.ResultCode == nil {
		return env, fmt.Errorf("%s: not the V1 answer (no ResultCode)%s", statusText(a.status), w.quote(a))
	}
	return env, nil
}

// reason renders the envelope's code and reason: `ResultCode 02 "meter
// 1 does not exist"`.
func (env v1Envelope) reason(w wire) string {
	s := "ResultCode " + w.clean(string(*env.ResultCode))
	if r := w.clean(string(env.Reason)); r != "" {
		s += fmt.Sprintf(" %q", r)
	}
	return s
}

// parseV1Create reads the answer of a create call: the TaskNo, or why
// there is none. ResultCode "99" (a token rejected at once) is permanent;
// "00" without a TaskNo is in doubt.
func (w wire) parseV1Create(a answer) (string, error) {
	env, err := w.decodeV1(a)
	if err != nil {
		return "", err
	}
	code := strings.TrimSpace(string(*env.ResultCode))
	if env.Result != nil && env.Result.TaskNo != "" {
		id := string(env.Result.TaskNo)
		if checkField("TaskNo", id) != nil {
			return "", &doubtError{fmt.Errorf("the API answered a TaskNo herald cannot use: %q", w.clean(id))}
		}
		return id, nil
	}
	switch code {
	case v1ResultRejected:
		return "", herald.WithAnswer("ResultCode "+code, herald.Permanent(fmt.Errorf("rejected at once (%s): a token possibly already delivered", env.reason(w))))
	case v1ResultOK:
		return "", &doubtError{fmt.Errorf("the API answered %s without a TaskNo", env.reason(w))}
	}
	return "", herald.WithAnswer("ResultCode "+w.clean(code), fmt.Errorf("the task was not created: %s", env.reason(w)))
}

// parseV1Result reads the answer of a poll: Result.Status null, "unknown"
// or absent is pending, "True" done, "False" failed at the meter with the
// vendor's reason (an *executionError); ResultCode "99" is a rejected
// token, and an answer without a Result says the API has no such task:
// both fail permanently. Any other answer is a poll error.
func (w wire) parseV1Result(a answer) (herald.PollResult, error) {
	env, err := w.decodeV1(a)
	if err != nil {
		return herald.PollPending, err
	}
	if strings.TrimSpace(string(*env.ResultCode)) == v1ResultRejected {
		return herald.PollFailed, herald.Permanent(fmt.Errorf("the meter rejected the token (%s), possibly already delivered", env.reason(w)))
	}
	if env.Result == nil {
		return herald.PollFailed, herald.Permanent(fmt.Errorf("the API has no such task: %s", env.reason(w)))
	}
	status, err := v1Status(env.Result.Status)
	if err != nil {
		return herald.PollPending, fmt.Errorf("%w%s", err, w.quote(a))
	}
	switch strings.ToLower(status) {
	case "", "unknown":
		return herald.PollPending, nil
	case "true":
		return herald.PollSucceeded, nil
	case "false":
		why := reasonExecutionFailed
		if r := w.clean(string(env.Reason)); r != "" && !strings.EqualFold(r, "OK") {
			why = r
		}
		return herald.PollFailed, &executionError{reason: why, detail: "Result.Status False"}
	}
	return herald.PollPending, fmt.Errorf("unexpected Result.Status %q", w.clean(status))
}

// v1Status reads Result.Status: null (or absent) as "", a string as it is,
// a boolean as "True" or "False".
func v1Status(raw json.RawMessage) (string, error) {
	var v any
	if len(raw) == 0 {
		return "", nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", errors.New("unreadable Result.Status")
	}
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return strings.TrimSpace(v), nil
	case bool:
		if v {
			return "True", nil
		}
		return "False", nil
	}
	return "", errors.New("Result.Status is neither null, a string nor a boolean")
}
