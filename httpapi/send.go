package httpapi

import (
	"encoding/base64"
	"net/http"

	"github.com/heraldmq/herald"
)

// sendBody is the JSON body of POST /v1/messages.
type sendBody struct {
	Route          string            `json:"route"`
	Target         string            `json:"target"`
	Payload        string            `json:"payload"`
	Text           string            `json:"text"`
	Params         map[string]string `json:"params"`
	Priority       int               `json:"priority"`
	Lane           string            `json:"lane"`
	CorrelationID  string            `json:"correlation_id"`
	IdempotencyKey string            `json:"idempotency_key"`
	CoalesceKey    string            `json:"coalesce_key"`
	ExpiresAt      bodyTime          `json:"expires_at"`
	SendAt         bodyTime          `json:"send_at"`
}

// request checks b and returns it as the engine's SendRequest. The target
// is not checked here: the route's carrier does that in Engine.Send.
func (b *sendBody) request() (herald.SendRequest, *requestError) {
	if b.Route == "" {
		return herald.SendRequest{}, badRequest(codeMissingField, "route: is required")
	}
	if b.Payload != "" && b.Text != "" {
		return herald.SendRequest{}, badRequest(codeInvalidField, "payload: give payload or text, not both")
	}
	if b.Payload == "" && b.Text == "" {
		return herald.SendRequest{}, badRequest(codeMissingField, "payload: one of payload or text is required")
	}
	var payload []byte
	if b.Payload != "" {
		var err error
		if payload, err = decodeBase64(b.Payload); err != nil {
			return herald.SendRequest{}, badRequest(codeInvalidField, "payload: not valid base64")
		}
		if len(payload) == 0 {
			return herald.SendRequest{}, badRequest(codeInvalidField, "payload: decodes to no bytes")
		}
	}
	expires, bad := b.ExpiresAt.parse("expires_at")
	if bad != nil {
		return herald.SendRequest{}, bad
	}
	sendAt, bad := b.SendAt.parse("send_at")
	if bad != nil {
		return herald.SendRequest{}, bad
	}
	return herald.SendRequest{
		Route: b.Route, Target: b.Target, Payload: payload, Text: b.Text, Params: b.Params,
		Priority: b.Priority, Lane: b.Lane, CorrelationID: b.CorrelationID,
		IdempotencyKey: b.IdempotencyKey, CoalesceKey: b.CoalesceKey, ExpiresAt: expires, SendAt: sendAt,
	}, nil
}

// decodeBase64 decodes standard base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return base64.RawStdEncoding.DecodeString(s)
	}
	return b, nil
}

// send handles POST /v1/messages: 202 and the view of a new message, 200
// and the view of the earlier one for an idempotent repeat.
func (a *api) send(w http.ResponseWriter, r *http.Request) {
	var body sendBody
	if bad := decodeBody(w, r, &body, false); bad != nil {
		writeRequestError(w, bad)
		return
	}
	req, bad := body.request()
	if bad != nil {
		writeRequestError(w, bad)
		return
	}
	m, created, err := a.engine.Send(r.Context(), tenantOf(r), req)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/messages/"+m.ID)
	status := http.StatusOK
	if created {
		status = http.StatusAccepted
	}
	writeJSON(w, status, m.View())
}
