package herald

import (
	"container/list"
	"context"
	"errors"
	"strings"
	"sync"
)

// A room event's data is stored once, with the event, and not with each
// of its deliveries: a delivery's Text is empty and its params name the
// event (event_id). The engine fills a delivery's Text from its event
// whenever it hands the delivery on (a claim, a pull, a read), through a
// cache of the events' data, so that an event fanned out to many
// subscriptions is read once. (Deliveries stored before, which hold the
// data themselves, keep it.)

// eventDataCacheBytes bounds the data the cache holds.
const eventDataCacheBytes = 64 << 20

// eventDataCache holds the data of the room events read last, by event
// id, up to eventDataCacheBytes; the least recently used goes first.
type eventDataCache struct {
	mu    sync.Mutex
	bytes int
	order *list.List               // of *eventData, most recently used first
	byID  map[string]*list.Element // event id -> its element of order
}

type eventData struct {
	id, data string
}

// get returns the data of event id, and whether the cache has it.
func (c *eventDataCache) get(id string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if !ok {
		return "", false
	}
	c.order.MoveToFront(el)
	return el.Value.(*eventData).data, true
}

// put keeps data as event id's, forgetting the least recently used
// events' beyond the bound.
func (c *eventDataCache) put(id, data string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID, c.order = make(map[string]*list.Element), list.New()
	}
	if _, ok := c.byID[id]; ok || len(data) > eventDataCacheBytes {
		return
	}
	c.byID[id] = c.order.PushFront(&eventData{id: id, data: data})
	c.bytes += len(data)
	for c.bytes > eventDataCacheBytes {
		last := c.order.Back()
		ev := c.order.Remove(last).(*eventData)
		delete(c.byID, ev.id)
		c.bytes -= len(ev.data)
	}
}

// isDeliveryOfStoredEvent reports whether m is a room's delivery whose
// data is its event's, to be read.
func isDeliveryOfStoredEvent(m *Message) bool {
	return m.Text == "" && strings.HasPrefix(m.Route, RoomRoutePrefix) && m.Params["event_id"] != ""
}

// fillEventData sets the Text of each of msgs that is a delivery of a
// stored event to the event's data. A delivery whose event is gone keeps
// an empty Text (its send fails: see carrier/room).
func (e *Engine) fillEventData(ctx context.Context, msgs ...*Message) error {
	for _, m := range msgs {
		if !isDeliveryOfStoredEvent(m) {
			continue
		}
		id := m.Params["event_id"]
		data, ok := e.eventData.get(id)
		if !ok {
			ev, err := e.store.RoomEvent(ctx, id)
			if errors.Is(err, ErrNotFound) {
				e.problem("event_data_gone", "a delivery's event is gone: it has no data", "id", m.ID, "event", id)
				continue
			}
			if err != nil {
				return err
			}
			data = string(ev.Data)
			e.eventData.put(id, data)
		}
		m.Text = data
	}
	return nil
}
