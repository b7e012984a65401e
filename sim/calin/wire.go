package calin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads the request body as JSON into v.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the JSON value")
	}
	return nil
}

// flexString is a JSON string that also accepts a number (V2 polls send
// the task id as a number, Number(deliveryQueueId)) or null (empty).
type flexString string

// UnmarshalJSON accepts a string, a number or null.
func (f *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*f = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = flexString(s)
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("want a string or a number, got %s", b)
		}
		if i, err := n.Int64(); err == nil {
			*f = flexString(strconv.FormatInt(i, 10))
		} else if x, err := n.Float64(); err == nil && x == float64(int64(x)) {
			*f = flexString(strconv.FormatInt(int64(x), 10))
		} else {
			*f = flexString(n.String())
		}
	}
	return nil
}

// v1Message is the ASP.NET Web API error body V1's client reads on a
// non-2xx answer (errBody.Message).
type v1Message struct {
	Message string `json:"Message"`
}

// v2Problem is the body of a V2 400 or 415 (an RFC 7807 problem, as ASP.NET
// Core answers; V2's client reads no body on a non-2xx answer).
type v2Problem struct {
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// badRequest answers a body that is not the JSON the endpoint takes.
func (s *Sim) badRequest(w http.ResponseWriter, err error) {
	if s.cfg.API == V1 {
		writeJSON(w, http.StatusBadRequest, v1Message{Message: "The request is invalid. " + err.Error()})
		return
	}
	s.problem(w, http.StatusBadRequest, "One or more validation errors occurred.", err.Error())
}

// notFound answers a path the API does not have.
func (s *Sim) notFound(w http.ResponseWriter, r *http.Request) {
	if s.cfg.API == V1 {
		writeJSON(w, http.StatusNotFound, v1Message{Message: fmt.Sprintf("No HTTP resource was found that matches the request URI '%s'.", r.URL.Path)})
		return
	}
	w.WriteHeader(http.StatusNotFound)
}

// methodNotAllowed answers anything but a POST to a vendor endpoint.
func (s *Sim) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", http.MethodPost)
	if s.cfg.API == V1 {
		writeJSON(w, http.StatusMethodNotAllowed, v1Message{Message: fmt.Sprintf("The requested resource does not support http method '%s'.", r.Method)})
		return
	}
	w.WriteHeader(http.StatusMethodNotAllowed)
}

// unsupportedMedia answers a body that is not JSON.
func (s *Sim) unsupportedMedia(w http.ResponseWriter, ct string) {
	if s.cfg.API == V1 {
		writeJSON(w, http.StatusUnsupportedMediaType, v1Message{Message: fmt.Sprintf("The request entity's media type '%s' is not supported for this resource.", ct)})
		return
	}
	s.problem(w, http.StatusUnsupportedMediaType, "Unsupported Media Type", ct)
}

// problem answers a V2 problem.
func (s *Sim) problem(w http.ResponseWriter, status int, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v2Problem{Title: title, Status: status, Detail: detail})
}
