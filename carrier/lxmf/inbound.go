package lxmf

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	lxm "github.com/heraldmq/herald/reticulum/lxmf"
)

// Inbound is an LXMF message addressed to herald, as the subscribers get
// it (the lxmf object of an lxmf.message outcome event).
type Inbound struct {
	// Hash is the message id, hex.
	Hash string `json:"hash"`
	// Source is the sender's LXMF address, Destination herald's.
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Title       string `json:"title"`
	Content     string `json:"content"`
	// Fields are the message's LXMF fields by their numeric id; byte
	// strings are base64.
	Fields map[string]any `json:"fields,omitempty"`
	// Method is how it came: opportunistic or direct.
	Method string `json:"method"`
	// Timestamp is the sender's time of the message.
	Timestamp time.Time `json:"timestamp"`
	// SignatureValid says whether its signature checked out against the
	// sender's announced identity (false when herald has not heard the
	// sender announce).
	SignatureValid bool `json:"signature_valid"`
}

func inboundView(m *lxm.Received) Inbound {
	method := "direct"
	if m.Method == lxm.MethodOpportunistic {
		method = "opportunistic"
	}
	v := Inbound{Hash: hex.EncodeToString(m.Hash[:]), Source: m.Source.String(), Destination: m.Destination.String(),
		Title: string(m.Title), Content: string(m.Content), Method: method, SignatureValid: m.SignatureValid,
		Timestamp: time.Unix(0, int64(m.Timestamp*1e9)).UTC()}
	if len(m.Fields) > 0 {
		v.Fields = map[string]any{}
		for k, f := range m.Fields {
			v.Fields[strconv.Itoa(k)] = jsonValue(f)
		}
	}
	return v
}

// jsonValue makes a msgpack value JSON: byte strings base64, maps keyed by
// their keys' text.
func jsonValue(v any) any {
	switch x := v.(type) {
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(jsonValue(k))] = jsonValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e)
		}
		return out
	}
	return v
}
