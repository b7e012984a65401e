package chirpstack

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/heraldmq/herald"
)

// TestCallErrorCarriesTheCode: a call's error carries its gRPC code as
// the specification names it, whatever its class.
func TestCallErrorCarriesTheCode(t *testing.T) {
	for _, tc := range []struct {
		code      codes.Code
		want      string
		permanent bool
	}{
		{codes.Unavailable, "UNAVAILABLE", false},
		{codes.DeadlineExceeded, "DEADLINE_EXCEEDED", false},
		{codes.NotFound, "NOT_FOUND", true},
		{codes.InvalidArgument, "INVALID_ARGUMENT", true},
	} {
		err := callError("Enqueue", "0102030405060708", status.Error(tc.code, "words"))
		var pe *herald.PermanentError
		if got := herald.AnswerOf(err); got != tc.want || errors.As(err, &pe) != tc.permanent {
			t.Errorf("%v: answer %q, err %v; want %q, permanent %v", tc.code, got, err, tc.want, tc.permanent)
		}
	}
	if got := codeName(codes.OK); got != "OK" {
		t.Errorf("codeName(OK) = %q", got)
	}
}
