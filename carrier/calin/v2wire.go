package calin

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/heraldmq/herald"
)

// The V2 task statuses (CalinApiV2TaskDataResponse).
const (
	v2Processing = 0
	v2Success    = 1
	v2Failed     = 2
	v2Rejected   = 3 // a rejected token
)

// v2Envelope is every V2 answer: {"code","reason","result"}; code 0 and
// reason "success" is the happy path.
type v2Envelope struct {
	Code   *flexString     `json:"code"`
	Reason flexString      `json:"reason"`
	Result json.RawMessage `json:"result"`
}

// decodeV2 reads a V2 answer and its code: an error for one that is not
// 2xx or not the V2 envelope. quoteBody false keeps a 2xx body out of the
// error (a login answer may hold a token).
func (w wire) decodeV2(a answer, quoteBody bool) (v2Envelope, int, error) {
	var env v2Envelope
	if !quoteBody {
		w = w.hiding(a.body)
	}
	if !a.ok() {
		detail := w.quote(a)
		if a.isHTML() {
			detail = ", an HTML page" + detail
		}
		return env, 0, w.statusError(a, detail)
	}
	quoted := w.quote(a)
	if !quoteBody {
		quoted = fmt.Sprintf(" (%d bytes)", len(a.body))
	}
	switch {
	case a.isHTML():
		return env, 0, fmt.Errorf("%s: an HTML page, not the API's answer%s", statusText(a.status), quoted)
	case a.truncated:
		return env, 0, fmt.Errorf("%s: not the API's answer%s", statusText(a.status), quoted)
	}
	if err := json.Unmarshal(a.body, &env); err != nil || env.Code == nil {
		return env, 0, fmt.Errorf("%s: not the V2 answer (no code)%s", statusText(a.status), quoted)
	}
	code, ok := flexInt(*env.Code)
	if !ok {
		return env, 0, fmt.Errorf("%s: not the V2 answer (code %q)%s", statusText(a.status), w.clean(string(*env.Code)), quoted)
	}
	return env, code, nil
}

// hiding returns w with the token a login answer holds, if any, among
// the secrets kept out of error texts.
func (w wire) hiding(body []byte) wire {
	var login struct {
		Result struct {
			Token flexString `json:"token"`
		} `json:"result"`
	}
	if json.Unmarshal(body, &login) == nil && len(login.Result.Token) >= 4 {
		w.secrets = append(w.secrets[:len(w.secrets):len(w.secrets)], string(login.Result.Token))
	}
	return w
}

// reason renders the envelope's code and reason: `code 2 "meter 1 does
// not exist"`.
func (env v2Envelope) reason(w wire, code int) string {
	s := fmt.Sprintf("code %d", code)
	if r := w.clean(string(env.Reason)); r != "" {
		s += fmt.Sprintf(" %q", r)
	}
	return s
}

// parseV2Login reads the answer of a login: the bearer token and its
// expiry (zero when its JWT has no readable exp claim).
func (w wire) parseV2Login(a answer) (string, time.Time, error) {
	env, code, err := w.decodeV2(a, false)
	if err != nil {
		return "", time.Time{}, err
	}
	var res struct {
		Token string `json:"token"`
	}
	if json.Unmarshal(env.Result, &res) != nil || strings.TrimSpace(res.Token) == "" {
		return "", time.Time{}, fmt.Errorf("refused, no token: %s", env.reason(w, code))
	}
	tok := strings.TrimSpace(res.Token)
	if strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", time.Time{}, errors.New("the token holds characters a bearer token never has")
	}
	exp, _ := jwtExpiry(tok)
	return tok, exp, nil
}

// jwtExpiry reads the exp claim (seconds) of a JWT, without checking its
// signature.
func jwtExpiry(tok string) (time.Time, bool) {
	parts := strings.Split(tok, ".")
	if len(parts) < 2 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *float64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	if e := *claims.Exp; e > 0 && e < 1<<40 && !math.IsNaN(e) {
		return time.Unix(int64(e), 0), true
	}
	return time.Time{}, false
}

// parseV2Create reads the answer of a create call: the first task's id, or
// why there is none. Code 0 without an id is in doubt.
func (w wire) parseV2Create(a answer) (string, error) {
	env, code, err := w.decodeV2(a, true)
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", herald.WithAnswer("code "+strconv.Itoa(code), fmt.Errorf("the task was not created: %s", env.reason(w, code)))
	}
	var items []struct {
		ID flexString `json:"id"`
	}
	if json.Unmarshal(env.Result, &items) != nil || len(items) == 0 || items[0].ID == "" {
		return "", &doubtError{fmt.Errorf("the API answered %s without a task id%s", env.reason(w, code), w.quote(a))}
	}
	id := string(items[0].ID)
	if checkField("id", id) != nil {
		return "", &doubtError{fmt.Errorf("the API answered a task id herald cannot use: %q", w.clean(id))}
	}
	return id, nil
}

// v2Task is a task row of a get answer.
type v2Task struct {
	Name   flexString      `json:"name"`
	Status *flexString     `json:"status"`
	Data   json.RawMessage `json:"data"`
}

// parseV2Task reads the answer of a poll: status 0 is pending, 1 done, 2
// failed at the meter with the vendor's reason and 3 a rejected token
// (each an *executionError). An answer with a code other than 0, or
// without a task row, says the API has no such task: it fails
// permanently. Any other answer is a poll error.
func (w wire) parseV2Task(a answer) (herald.PollResult, error) {
	env, code, err := w.decodeV2(a, true)
	if err != nil {
		return herald.PollPending, err
	}
	var res struct {
		Data []v2Task `json:"data"`
	}
	if code != 0 || json.Unmarshal(env.Result, &res) != nil || len(res.Data) == 0 {
		return herald.PollFailed, herald.Permanent(fmt.Errorf("the API has no such task: %s", env.reason(w, code)))
	}
	if res.Data[0].Status == nil {
		return herald.PollPending, fmt.Errorf("no task status in the answer%s", w.quote(a))
	}
	status, ok := flexInt(*res.Data[0].Status)
	if !ok {
		return herald.PollPending, fmt.Errorf("unexpected task status %q", w.clean(string(*res.Data[0].Status)))
	}
	switch status {
	case v2Processing:
		return herald.PollPending, nil
	case v2Success:
		return herald.PollSucceeded, nil
	case v2Failed:
		why := reasonExecutionFailed
		if r := w.clean(string(env.Reason)); r != "" && !strings.EqualFold(r, "success") {
			why = r
		}
		return herald.PollFailed, &executionError{reason: why, detail: "status 2"}
	case v2Rejected:
		return herald.PollFailed, &executionError{reason: reasonTokenRejected, detail: "status 3", rejected: true}
	}
	return herald.PollPending, fmt.Errorf("unexpected task status %d", status)
}
