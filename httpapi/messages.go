package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/heraldmq/herald"
)

// List limits.
const (
	// DefaultListLimit is the page size when limit is absent.
	DefaultListLimit = 100
	// MaxListLimit is the largest page size a request may ask for.
	MaxListLimit = 1000
)

// listBody is the answer of the list endpoints.
type listBody struct {
	Messages   []herald.MessageView `json:"messages"`
	NextCursor string               `json:"next_cursor"`
}

func newListBody(msgs []*herald.Message, next string) listBody {
	b := listBody{Messages: make([]herald.MessageView, 0, len(msgs)), NextCursor: next}
	for _, m := range msgs {
		b.Messages = append(b.Messages, m.View())
	}
	return b
}

// parseLimit reads the limit query parameter.
func parseLimit(r *http.Request) (int, *requestError) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return DefaultListLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxListLimit {
		return 0, badRequest(codeInvalidField, "limit: want an integer from 1 to %d", MaxListLimit)
	}
	return n, nil
}

// get handles GET /v1/messages/{id}.
func (a *api) get(w http.ResponseWriter, r *http.Request) {
	m, err := a.engine.Get(r.Context(), tenantOf(r), r.PathValue("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, m.View())
}

// maxIDPrefix bounds the id_prefix of a list: longer than any id.
const maxIDPrefix = 64

// list handles GET /v1/messages?status=&route=&correlation_id=&target=&id_prefix=&limit=&cursor=.
// target matches the message's target exactly; id_prefix the start of its id.
func (a *api) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	query := herald.Query{Route: q.Get("route"), CorrelationID: q.Get("correlation_id"), Target: q.Get("target"),
		IDPrefix: q.Get("id_prefix"), Cursor: q.Get("cursor")}
	if len(query.IDPrefix) > maxIDPrefix {
		writeError(w, http.StatusBadRequest, codeInvalidField, fmt.Sprintf("id_prefix: at most %d bytes", maxIDPrefix))
		return
	}
	if s := q.Get("status"); s != "" {
		st, err := herald.ParseStatus(s)
		if err != nil {
			writeError(w, http.StatusBadRequest, codeInvalidField, "status: "+err.Error())
			return
		}
		query.Status = st
	}
	limit, bad := parseLimit(r)
	if bad != nil {
		writeRequestError(w, bad)
		return
	}
	query.Limit = limit
	a.listPage(w, r, query)
}

// listPage answers the page of query's messages; with ?timeline=true each
// is read again with its timeline, which lists leave out.
func (a *api) listPage(w http.ResponseWriter, r *http.Request, query herald.Query) {
	var timelines bool
	switch r.URL.Query().Get("timeline") {
	case "", "false":
	case "true":
		timelines = true
	default:
		writeError(w, http.StatusBadRequest, codeInvalidField, "timeline: want true or false")
		return
	}
	msgs, next, err := a.engine.List(r.Context(), tenantOf(r), query)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	for i, m := range msgs {
		if !timelines {
			break
		}
		full, err := a.engine.Get(r.Context(), tenantOf(r), m.ID)
		switch {
		case errors.Is(err, herald.ErrNotFound): // pruned since: as listed
		case err != nil:
			a.fail(w, r, err)
			return
		default:
			msgs[i] = full
		}
	}
	writeJSON(w, http.StatusOK, newListBody(msgs, next))
}

// cancel handles POST /v1/messages/{id}/cancel.
func (a *api) cancel(w http.ResponseWriter, r *http.Request) {
	m, err := a.engine.Cancel(r.Context(), tenantOf(r), r.PathValue("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, m.View())
}

// replay handles POST /v1/messages/{id}/replay.
func (a *api) replay(w http.ResponseWriter, r *http.Request) {
	m, err := a.engine.Replay(r.Context(), tenantOf(r), r.PathValue("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, m.View())
}

// explain handles GET /v1/messages/{id}/explain.
func (a *api) explain(w http.ResponseWriter, r *http.Request) {
	x, err := a.engine.Explain(r.Context(), tenantOf(r), r.PathValue("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, x)
}
