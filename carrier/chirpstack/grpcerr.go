package chirpstack

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/heraldmq/herald"
)

// authorized returns ctx with the API token as ChirpStack wants it.
func (c *Carrier) authorized(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.token)
}

// fkUnknownDevice is in the error ChirpStack answers an admin API key that
// enqueues for a DevEUI it does not know (the insert fails on the device
// foreign key).
const fkUnknownDevice = "device_queue_item_dev_eui_fkey"

// callError classifies the error of a gRPC call about a device (see the
// package comment); it carries the call's gRPC code (herald.WithAnswer).
func callError(method, devEUI string, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("chirpstack: %s %s: %w", method, devEUI, err)
	}
	return herald.WithAnswer(codeName(st.Code()), classify(method, devEUI, st))
}

// codeName returns c as gRPC's specification names it: UNAVAILABLE,
// DEADLINE_EXCEEDED, OK.
func codeName(c codes.Code) string {
	if c == codes.OK {
		return "OK"
	}
	var b strings.Builder
	for i, r := range c.String() {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// classify is callError's error of a call that answered st.
func classify(method, devEUI string, st *status.Status) error {
	desc := clean(st.Message())
	e := fmt.Errorf("chirpstack: %s %s: %s", method, devEUI, st.Code())
	if desc != "" {
		e = fmt.Errorf("%w: %s", e, desc)
	}
	switch st.Code() {
	case codes.Unauthenticated, codes.PermissionDenied:
		return herald.Permanent(fmt.Errorf("%w (the API token is wrong, revoked, or not for this device's tenant)", e))
	case codes.NotFound:
		return herald.Permanent(fmt.Errorf("%w (no such device)", e))
	case codes.InvalidArgument:
		return herald.Permanent(e)
	case codes.Unimplemented:
		return herald.Permanent(fmt.Errorf("%w (is the server ChirpStack v4?)", e))
	case codes.Internal:
		if strings.Contains(st.Message(), fkUnknownDevice) {
			return herald.Permanent(fmt.Errorf("chirpstack: %s %s: no such device (%s)", method, devEUI, desc))
		}
	}
	return e
}

// errorTextLen is how much of ChirpStack's words an error quotes.
const errorTextLen = 200

// clean makes a text fit for an error: valid UTF-8, its white space
// collapsed, at most errorTextLen bytes.
func clean(s string) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "")), " ")
	if len(s) > errorTextLen {
		s = strings.ToValidUTF8(s[:errorTextLen], "") + "…"
	}
	return s
}
