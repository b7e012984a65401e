package webhook

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/heraldmq/herald"
)

// TestSendCarriesTheAnswer: the answer's HTTP status is the send's answer
// code, on an acceptance (SendResult.Answer) as on every failure
// (herald.AnswerOf), whatever its class.
func TestSendCarriesTheAnswer(t *testing.T) {
	for _, tc := range []struct {
		status    int
		permanent bool
	}{{http.StatusNoContent, false}, {http.StatusServiceUnavailable, false}, {http.StatusInternalServerError, false}, {http.StatusBadRequest, true}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(tc.status) }))
		c, err := New(Config{URL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Send(context.Background(), &herald.Message{ID: "m1", Text: "x"})
		srv.Close()
		answer := res.Answer
		if err != nil {
			answer = herald.AnswerOf(err)
		}
		var pe *herald.PermanentError
		if answer != strconv.Itoa(tc.status) || errors.As(err, &pe) != tc.permanent {
			t.Errorf("%d: answer %q, err %v; want answer %d, permanent %v", tc.status, answer, err, tc.status, tc.permanent)
		}
	}
}
