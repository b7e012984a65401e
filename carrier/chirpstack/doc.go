// Package chirpstack is a herald.Carrier that sends LoRaWAN downlinks
// through a stock ChirpStack v4 network server, and reads the events
// ChirpStack sends back, as ChirpStack documents them: its gRPC API
// (github.com/chirpstack/chirpstack/api/go/v4, package api) and its HTTP and
// MQTT integrations (package integration). Nothing needs installing on the
// ChirpStack side.
//
// # Messages
//
// A message's target is the device's DevEUI (16 hex digits, either case;
// ChirpStack is given it in lower case), its payload the frame's bytes (at
// most MaxPayload), params.f_port the FPort (1–223, default 1) and
// params.confirmed "true" (the default: the device must acknowledge) or
// "false". See Validate.
//
// # Sending
//
// With Send SendGRPC (the default) a message is enqueued by
// api.DeviceService/Enqueue with the API token as "authorization: Bearer"
// metadata; ChirpStack assigns the queue item's id, which becomes the
// message's external id. A retry of a message whose earlier queue item
// ChirpStack still holds untransmitted (the external id is kept across
// attempts) takes that item over instead of enqueueing a second one.
// ChirpStack assigns the id itself (it ignores one given to Enqueue), so
// an Enqueue whose outcome is unknown leaves an item herald cannot name:
// the call timed out, was cancelled or lost its connection (its error
// then says ChirpStack may have queued the item), or it did not answer
// before the accept deadline (herald.AcceptTimeoutError: it hung, or
// herald stopped during it). The retry of such a message, when it has an
// ExpiresAt, first looks for an untransmitted item with the same FPort,
// confirmed flag, bytes and expires_at, and takes it over. The expiry is
// the message's own (to the millisecond, as herald keeps it): an
// identical downlink to the same device with the same expiry can be taken
// for it. The device then gets one downlink for both messages, and the
// message whose events the other's item does not answer is retried at its
// carrier timeout (the lorawan and classc profiles retry then), so each
// is still delivered. Without an expiry, once
// ChirpStack has sent the item, or while ChirpStack is still queueing it
// when the retry looks, the retry enqueues again and the device may get
// the downlink twice. ChirpStack's own refusals (a status it answered,
// such as Internal) queued nothing, and their retry enqueues at once.
//
// With Send SendMQTT the item goes as an integration.DownlinkCommand on
// the MQTT integration's application/<application>/device/<DevEUI>/command/down
// topic, at QoS 1, with herald's own message id (a UUID) as the queue item
// id: a re-send after a crash finds the item already there (ChirpStack
// refuses a second item with that id), so the device gets it once. The
// broker's PUBACK is the acceptance; ChirpStack answers nothing, so a
// command it refuses is noticed only when the item is not queued at the
// carrier timeout (StillQueued).
//
// The queue item's expires_at is the message's ExpiresAt, when it has one:
// herald fails the message then, and ChirpStack drops the item instead of
// transmitting it late (with a log event EXPIRED). The stage deadlines are
// not used: Send's accept deadline bounds the call only, and the
// DELIVERED_TO_NS deadline is extended for as long as ChirpStack holds the
// item (StillQueued), so neither marks herald giving the item up.
//
// gRPC errors are classified by status code: Unauthenticated,
// PermissionDenied (the API token), NotFound (an unknown device),
// InvalidArgument (the FPort), Unimplemented (not a ChirpStack), and the
// foreign-key error ChirpStack answers an admin key for an unknown device
// are herald.Permanent; Unavailable, DeadlineExceeded, ResourceExhausted,
// Internal and the rest are transient.
//
// # Events
//
// ReadEvent reads ChirpStack's integration events, in JSON (as ChirpStack's
// pbjson writes it) or binary Protobuf:
//   - txack: herald.InboundTransmitted for its queueItemId;
//   - ack: herald.InboundAck for its queueItemId, paired with the uplink of
//     the same deduplicationId;
//   - up: herald.InboundUplink, with the Uplink view for subscribers;
//   - log about a queue item (context queue_item_id): herald.InboundFailed,
//     permanent for DOWNLINK_PAYLOAD_SIZE, transient for DOWNLINK_GATEWAY,
//     F_CNT_DOWN and EXPIRED. (ChirpStack v4 writes no queue item in a
//     DOWNLINK_GATEWAY log: the item stays queued and is sent at the next
//     opportunity, so that log needs no action.)
//
// Other logs, join, status and location events are read and ignored;
// anything else is an *herald.InvalidError.
//
// # MQTT integration
//
// With MQTT configured, Listen subscribes to
// application/<application or +>/device/+/event/+ at QoS 1 in a persistent
// session (clean session off, a stable client id), and acknowledges each
// event (PUBACK) only once herald's ingest made it durable; the broker
// keeps what arrives while herald is down and sends again what was not
// acknowledged. For that, ChirpStack's MQTT integration must publish at
// QoS 1 (its qos setting; the default 0 lets the broker drop events for a
// session that is offline). Each herald replica needs its own client id:
// two connections with one id take the session from each other.
package chirpstack
