package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/heraldmq/herald"
)

// The error codes of rooms and subscriptions.
const (
	codeRoomExists = "room_exists"
	codeNotPull    = "not_pull"
	codeConflict   = "conflict"
)

// deliveryBody is a room's or a subscription's "delivery": durations as
// "10s" or integer milliseconds (shown as "10s"); a field absent keeps the
// default (a room) or the room's (a subscription).
type deliveryBody struct {
	Delay      *duration `json:"delay,omitempty"`
	Multiplier *float64  `json:"multiplier,omitempty"`
	Attempts   *int      `json:"attempts,omitempty"`
}

// overrides returns b as the engine takes it.
func (b *deliveryBody) overrides() (herald.DeliveryOverrides, *requestError) {
	var o herald.DeliveryOverrides
	if b == nil {
		return o, nil
	}
	if b.Delay != nil {
		d, bad := b.Delay.check("delivery.delay")
		if bad != nil {
			return o, bad
		}
		o.Delay = &d
	}
	o.Multiplier, o.Attempts = b.Multiplier, b.Attempts
	return o, nil
}

// deliveryOf returns o as the API shows it.
func deliveryOf(o herald.DeliveryOverrides) deliveryBody {
	var b deliveryBody
	if o.Delay != nil {
		b.Delay = &duration{d: *o.Delay}
	}
	b.Multiplier, b.Attempts = o.Multiplier, o.Attempts
	return b
}

// roomBody is the body of POST /v1/rooms.
type roomBody struct {
	Name       string        `json:"name"`
	Expiration *duration     `json:"expiration"`
	Delivery   *deliveryBody `json:"delivery"`
}

// roomView is the JSON shape of a room.
type roomView struct {
	Name       string       `json:"name"`
	Expiration string       `json:"expiration"` // "0s": never
	Delivery   deliveryBody `json:"delivery"`
	CreatedAt  time.Time    `json:"created_at"`
	// Subscriptions is how many subscriptions it has.
	Subscriptions int `json:"subscriptions"`
}

func viewRoom(r *herald.Room) roomView {
	d, m, a := r.Delivery.Delay, r.Delivery.Multiplier, r.Delivery.Attempts
	return roomView{Name: r.Name, Expiration: r.Expiration.String(), CreatedAt: r.CreatedAt.UTC(), Subscriptions: r.Subscriptions,
		Delivery: deliveryOf(herald.DeliveryOverrides{Delay: &d, Multiplier: &m, Attempts: &a})}
}

// createRoom handles POST /v1/rooms: 201 and the room.
func (a *api) createRoom(w http.ResponseWriter, r *http.Request) {
	var body roomBody
	if bad := decodeBody(w, r, &body, false); bad != nil {
		writeRequestError(w, bad)
		return
	}
	if body.Name == "" {
		writeError(w, http.StatusBadRequest, codeMissingField, "name: is required")
		return
	}
	req := herald.RoomRequest{Name: body.Name}
	if body.Expiration != nil {
		d, bad := body.Expiration.check("expiration")
		if bad != nil {
			writeRequestError(w, bad)
			return
		}
		req.Expiration = d
	}
	var bad *requestError
	if req.Delivery, bad = body.Delivery.overrides(); bad != nil {
		writeRequestError(w, bad)
		return
	}
	room, err := a.engine.CreateRoom(r.Context(), tenantOf(r), req)
	if err != nil {
		a.failRooms(w, r, err, "room")
		return
	}
	w.Header().Set("Location", "/v1/rooms/"+room.Name)
	writeJSON(w, http.StatusCreated, viewRoom(room))
}

// listRooms handles GET /v1/rooms: {"rooms":[...]}, by name.
func (a *api) listRooms(w http.ResponseWriter, r *http.Request) {
	rooms, err := a.engine.Rooms(r.Context(), tenantOf(r))
	if err != nil {
		a.failRooms(w, r, err, "room")
		return
	}
	views := make([]roomView, len(rooms))
	for i := range rooms {
		views[i] = viewRoom(&rooms[i])
	}
	writeJSON(w, http.StatusOK, map[string][]roomView{"rooms": views})
}

// getRoom handles GET /v1/rooms/{name}.
func (a *api) getRoom(w http.ResponseWriter, r *http.Request) {
	room, err := a.engine.Room(r.Context(), tenantOf(r), r.PathValue("name"))
	if err != nil {
		a.failRooms(w, r, err, "room")
		return
	}
	writeJSON(w, http.StatusOK, viewRoom(room))
}

// deleteRoom handles DELETE /v1/rooms/{name}: 204.
func (a *api) deleteRoom(w http.ResponseWriter, r *http.Request) {
	if err := a.engine.DeleteRoom(r.Context(), tenantOf(r), r.PathValue("name")); err != nil {
		a.failRooms(w, r, err, "room")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// eventTypeBody is one of a subscription's event types.
type eventTypeBody struct {
	Type    string          `json:"type"`
	Version json.RawMessage `json:"version,omitempty"`
}

// subscriptionBody is the body of POST /v1/rooms/{room}/subscriptions.
type subscriptionBody struct {
	Type       string          `json:"type"`
	URL        string          `json:"url"`
	Secret     string          `json:"secret"`
	EventTypes []eventTypeBody `json:"event_types"`
	Delivery   *deliveryBody   `json:"delivery"`
	// Expiration is refused: the room's owner sets it.
	Expiration json.RawMessage `json:"expiration"`
	// SecretEnv is refused: a tenant names no variable of the server.
	SecretEnv json.RawMessage `json:"secret_env"`
}

// eventTypeView is one of a subscription's event types as the API shows
// it.
type eventTypeView struct {
	Type    string `json:"type"`
	Version string `json:"version,omitempty"`
}

// subscriptionView is the JSON shape of a subscription. Delivery holds the
// fields it overrides; the others are its room's.
type subscriptionView struct {
	ID         string          `json:"id"`
	Room       string          `json:"room"`
	Type       string          `json:"type"`
	URL        string          `json:"url,omitempty"`
	Secret     string          `json:"secret,omitempty"`
	SecretEnv  string          `json:"secret_env,omitempty"`
	EventTypes []eventTypeView `json:"event_types"`
	Delivery   deliveryBody    `json:"delivery"`
	CreatedAt  time.Time       `json:"created_at"`
	// Queued is a pull subscription's deliveries waiting to be pulled, in
	// GET /v1/subscriptions/{id} only.
	Queued *int `json:"queued,omitempty"`
}

func viewSubscription(s *herald.Subscription) subscriptionView {
	v := subscriptionView{ID: s.ID, Room: s.Room, Type: string(s.Type), URL: s.URL, SecretEnv: s.SecretEnv,
		EventTypes: make([]eventTypeView, len(s.EventTypes)), Delivery: deliveryOf(s.Delivery), CreatedAt: s.CreatedAt.UTC()}
	for i, et := range s.EventTypes {
		v.EventTypes[i] = eventTypeView(et)
	}
	return v
}

// versionText returns a version given as a string or a number as the
// text it stands for; absent or null is "".
func versionText(field string, raw json.RawMessage) (string, *requestError) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), nil
	}
	return "", badRequest(codeInvalidField, "%s: want a string", field)
}

// createSubscription handles POST /v1/rooms/{room}/subscriptions: 201 and
// the subscription.
func (a *api) createSubscription(w http.ResponseWriter, r *http.Request) {
	var body subscriptionBody
	if bad := decodeBody(w, r, &body, false); bad != nil {
		writeRequestError(w, bad)
		return
	}
	if body.Expiration != nil {
		writeError(w, http.StatusBadRequest, codeInvalidField, "expiration: the room's owner sets it for every subscription; a subscription cannot override it")
		return
	}
	if body.SecretEnv != nil {
		writeError(w, http.StatusBadRequest, codeInvalidField, "secret_env: a subscription cannot name an environment variable of the server; give secret (whsec_ and base64), or leave it out and herald generates one")
		return
	}
	if body.Type == "" {
		writeError(w, http.StatusBadRequest, codeMissingField, "type: is required (push or pull)")
		return
	}
	req := herald.SubscriptionRequest{Type: herald.SubscriptionType(body.Type), URL: body.URL, Secret: body.Secret}
	for i, et := range body.EventTypes {
		v, bad := versionText("event_types["+strconv.Itoa(i)+"].version", et.Version)
		if bad != nil {
			writeRequestError(w, bad)
			return
		}
		req.EventTypes = append(req.EventTypes, herald.EventType{Type: et.Type, Version: v})
	}
	var bad *requestError
	if req.Delivery, bad = body.Delivery.overrides(); bad != nil {
		writeRequestError(w, bad)
		return
	}
	sub, err := a.engine.CreateSubscription(r.Context(), tenantOf(r), r.PathValue("room"), req)
	if err != nil {
		a.failRooms(w, r, err, "room")
		return
	}
	w.Header().Set("Location", "/v1/subscriptions/"+sub.ID)
	v := viewSubscription(sub)
	v.Secret = sub.Secret // shown in this answer only
	writeJSON(w, http.StatusCreated, v)
}

// listSubscriptions handles GET /v1/rooms/{room}/subscriptions:
// {"subscriptions":[...]}, oldest first.
func (a *api) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	subs, err := a.engine.Subscriptions(r.Context(), tenantOf(r), r.PathValue("room"))
	if err != nil {
		a.failRooms(w, r, err, "room")
		return
	}
	views := make([]subscriptionView, len(subs))
	for i := range subs {
		views[i] = viewSubscription(&subs[i])
	}
	writeJSON(w, http.StatusOK, map[string][]subscriptionView{"subscriptions": views})
}

// getSubscription handles GET /v1/subscriptions/{id}: a pull
// subscription's with its queue's depth.
func (a *api) getSubscription(w http.ResponseWriter, r *http.Request) {
	sub, err := a.engine.Subscription(r.Context(), tenantOf(r), r.PathValue("id"))
	if err != nil {
		a.failRooms(w, r, err, "subscription")
		return
	}
	v := viewSubscription(sub)
	if sub.Type == herald.SubscriptionPull {
		n, err := a.engine.PullQueue(r.Context(), sub)
		if err != nil {
			a.failRooms(w, r, err, "subscription")
			return
		}
		v.Queued = &n
	}
	writeJSON(w, http.StatusOK, v)
}

// deleteSubscription handles DELETE /v1/subscriptions/{id}: 204.
func (a *api) deleteSubscription(w http.ResponseWriter, r *http.Request) {
	if err := a.engine.DeleteSubscription(r.Context(), tenantOf(r), r.PathValue("id")); err != nil {
		a.failRooms(w, r, err, "subscription")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// eventBody is the body of POST /v1/rooms/{room}/events.
type eventBody struct {
	Type          string          `json:"type"`
	Version       json.RawMessage `json:"version"`
	Data          json.RawMessage `json:"data"`
	CorrelationID string          `json:"correlation_id"`
	Subscriptions []string        `json:"subscriptions"` // absent: every subscription that takes it
}

// publish handles POST /v1/rooms/{room}/events: 202 and the event, with
// one delivery per subscription that takes it.
func (a *api) publish(w http.ResponseWriter, r *http.Request) {
	var body eventBody
	if bad := decodeBody(w, r, &body, false); bad != nil {
		writeRequestError(w, bad)
		return
	}
	if body.Type == "" {
		writeError(w, http.StatusBadRequest, codeMissingField, "type: is required")
		return
	}
	version, bad := versionText("version", body.Version)
	if bad != nil {
		writeRequestError(w, bad)
		return
	}
	ev, err := a.engine.Publish(r.Context(), tenantOf(r), r.PathValue("room"),
		herald.PublishRequest{Type: body.Type, Version: version, CorrelationID: body.CorrelationID, Data: body.Data,
			Subscriptions: body.Subscriptions})
	if err != nil {
		a.failRooms(w, r, err, "room")
		return
	}
	w.Header().Set("Location", "/v1/rooms/"+ev.Room+"/events/"+ev.ID)
	writeJSON(w, http.StatusAccepted, ev.View())
}

// getEvent handles GET /v1/rooms/{room}/events/{id}.
func (a *api) getEvent(w http.ResponseWriter, r *http.Request) {
	ev, err := a.engine.RoomEvent(r.Context(), tenantOf(r), r.PathValue("id"))
	if err == nil && ev.Room != r.PathValue("room") {
		err = herald.ErrNotFound
	}
	if err != nil {
		a.failRooms(w, r, err, "event")
		return
	}
	writeJSON(w, http.StatusOK, ev.View())
}

// pullBody is the body of POST /v1/subscriptions/{id}/pull; both fields
// are optional.
type pullBody struct {
	Max   int       `json:"max"`
	Lease *duration `json:"lease"`
}

// pull handles POST /v1/subscriptions/{id}/pull: {"deliveries":[...]},
// leased to the caller.
func (a *api) pull(w http.ResponseWriter, r *http.Request) {
	var body pullBody
	if bad := decodeBody(w, r, &body, true); bad != nil {
		writeRequestError(w, bad)
		return
	}
	var lease time.Duration
	if body.Lease != nil {
		var bad *requestError
		if lease, bad = body.Lease.check("lease"); bad != nil {
			writeRequestError(w, bad)
			return
		}
	}
	msgs, err := a.engine.Pull(r.Context(), tenantOf(r), r.PathValue("id"), body.Max, lease)
	if err != nil {
		a.failRooms(w, r, err, "subscription")
		return
	}
	views := make([]herald.DeliveryView, len(msgs))
	for i, m := range msgs {
		views[i] = m.DeliveryView()
		views[i].LeaseID = m.LeaseID()
	}
	writeJSON(w, http.StatusOK, map[string][]herald.DeliveryView{"deliveries": views})
}

// settleBody is the body of the ack and nack endpoints.
type settleBody struct {
	LeaseIDs []string `json:"lease_ids"`
	// IDs is refused with a word on what to give instead: ack and nack
	// name leases, not deliveries.
	IDs json.RawMessage `json:"ids"`
}

// ack handles POST /v1/subscriptions/{id}/ack: {"acked":N,"lost":[...]}.
func (a *api) ack(w http.ResponseWriter, r *http.Request) {
	a.settle(w, r, "acked", a.engine.Ack)
}

// nack handles POST /v1/subscriptions/{id}/nack: {"nacked":N,"lost":[...]}.
func (a *api) nack(w http.ResponseWriter, r *http.Request) {
	a.settle(w, r, "nacked", a.engine.Nack)
}

// settle answers an ack or a nack, done by do, with {key: N, "lost": [...]}.
func (a *api) settle(w http.ResponseWriter, r *http.Request, key string,
	do func(ctx context.Context, tenant, id string, leaseIDs []string) (int, []string, error)) {
	var body settleBody
	if bad := decodeBody(w, r, &body, false); bad != nil {
		writeRequestError(w, bad)
		return
	}
	switch {
	case body.IDs != nil:
		writeError(w, http.StatusBadRequest, codeUnknownField,
			`ids: unknown field; give "lease_ids", the lease_id of each delivery as the pull gave it (a lease, not the delivery's id)`)
		return
	case body.LeaseIDs == nil:
		writeError(w, http.StatusBadRequest, codeMissingField, "lease_ids: is required (the lease_id of each delivery as the pull gave it)")
		return
	}
	n, lost, err := do(r.Context(), tenantOf(r), r.PathValue("id"), body.LeaseIDs)
	if err != nil {
		a.failRooms(w, r, err, "subscription")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{key: n, "lost": lost})
}

// failRooms answers err of an endpoint of rooms, whose ErrNotFound is about
// a what ("room", "subscription", "event"), as fail does otherwise.
func (a *api) failRooms(w http.ResponseWriter, r *http.Request, err error, what string) {
	switch {
	case errors.Is(err, herald.ErrNotFound):
		writeError(w, http.StatusNotFound, codeNotFound, "no such "+what)
	case errors.Is(err, herald.ErrRoomExists):
		writeError(w, http.StatusConflict, codeRoomExists, "name: the room exists")
	case errors.Is(err, herald.ErrNotPull):
		writeError(w, http.StatusConflict, codeNotPull, err.Error())
	case errors.Is(err, herald.ErrConflict):
		writeError(w, http.StatusConflict, codeConflict, err.Error())
	default:
		a.fail(w, r, err)
	}
}
