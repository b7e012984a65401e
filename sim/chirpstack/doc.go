// Package chirpstack simulates a ChirpStack v4 network server for carrier
// tests, demos and load runs (herald sim chirpstack). It speaks
// ChirpStack's own wire formats, taken from its public definitions (v4.19):
// the gRPC API of github.com/chirpstack/chirpstack/api/go/v4 and the
// integration events of its integration package.
//
// # What is simulated
//
// gRPC API (api.DeviceService): Enqueue, GetQueue and FlushQueue; every
// other method answers Unimplemented, other services "unknown service".
// Every call needs "authorization: Bearer <token>" metadata with a
// configured token, else Unauthenticated (ChirpStack's messages: "no
// authorization provided", "authorization metadata must be in format
// 'Bearer <TOKEN>"). As in ChirpStack (api/device.rs, storage/device_queue.rs):
//   - Enqueue without queue_item is InvalidArgument "queue_item is
//     missing"; a malformed DevEUI is Internal (ChirpStack's mapping of its
//     hex error; "" is the zero EUI); flush_queue first drops the items
//     that are not pending.
//   - the FPort is cast to a byte, and 0 is InvalidArgument "Validation
//     error: FPort must be between 1 - 255" (so 1..255 pass, 256 does not,
//     257 becomes 1).
//   - the item gets a new UUID; ChirpStack ignores queue_item.id on
//     Enqueue (Config.HonorQueueItemID keeps it instead).
//   - the payload size is not checked at enqueue: an item longer than the
//     device's maximum is dropped when it is up for transmission, with a
//     log event DOWNLINK_PAYLOAD_SIZE (level ERROR, context
//     max_payload_size, item_size, queue_item_id). Likewise an item whose
//     expires_at passed is dropped then with a log event EXPIRED (context
//     queue_item_id), and an encrypted item whose f_cnt_down was used with
//     F_CNT_DOWN (downlink/data.rs, get_next_device_queue_item).
//   - an unknown DevEUI is NotFound "Object does not exist (id: …)" by
//     default; see UnknownDevice for what ChirpStack answers with admin and
//     tenant API keys.
//   - GetQueue lists pending items too (is_pending) in enqueue order, with
//     f_cnt_down once scheduled; FlushQueue removes every item.
//
// Downlinks (downlink/data.rs, downlink/tx_ack.rs, uplink/data.rs): a
// Class-A device gets the head of its queue only in answer to an uplink
// (periodic, Config.UplinkInterval, or Sim.Uplink); a Class-C device at
// once (its scheduler), and also after its uplinks. After Config.GatewayDelay
// the gateway acknowledges the transmission: a txack event (queueItemId,
// fCntDown, downlinkId, gatewayId, txInfo). An unconfirmed item then leaves
// the queue; a confirmed one stays pending until the device's answer: an
// uplink with the ACK bit gives the up event, then ack acknowledged=true
// with that uplink's deduplicationId; otherwise ChirpStack sends ack
// acknowledged=false — for Class A at the next uplink without ACK (with its
// deduplicationId), for Class C when Config.ClassCTimeout has passed (no
// deduplicationId). Loss, NackRate and GatewayErrorRate make devices miss
// downlinks, answer without ACK, and gateways refuse (log DOWNLINK_GATEWAY,
// description "TOO_LATE"; the item stays queued). One item is with the
// gateway at a time per device, and a pending confirmed item holds back
// the rest of its queue, as in ChirpStack.
//
// Integrations (integration/http.rs, integration/mqtt.rs): events up,
// join, ack, txack, log and status, as the integration protobuf messages,
// in JSON (default) or binary Protobuf. The JSON is what ChirpStack's
// pbjson serde writes (api/rust/build.rs): protojson's camelCase names,
// enums by name, base64 bytes, RFC 3339 times ending +00:00 (chrono's
// form); the integration messages' own fields always written, default
// values included (emit_fields), unset message fields left out, nested gw
// and common messages without their default values (see Marshal).
//
// HTTP: a POST to each endpoint of a comma-separated list with
// ?event=<type>, the configured headers and Content-Type application/json
// or application/octet-stream, a 5 s timeout; a failure (non-2xx or
// network) is logged and not retried, as ChirpStack does.
//
// MQTT: events are published to
// application/<application_id>/device/<dev_eui>/event/<type> at the
// configured QoS (0 by default, not retained); the simulator subscribes to
// application/+/device/+/command/+ and takes a "down" command's
// integration.DownlinkCommand (JSON or Protobuf: devEui, confirmed, fPort,
// data in base64, optional id and expiresAt) into the queue: its devEui
// must equal the topic's, its device must belong to the topic's
// application, its id (a UUID) is kept when given. A refused command is
// only logged, as in ChirpStack; Sim.Commands records why.
//
// # What is simplified
//
// API tokens are opaque strings compared as they are (ChirpStack's are JWTs
// signed with its secret, for admin or tenant keys); there is one tenant,
// one application, one device profile, one gateway and the EU868 band at
// DR0; devices are activated from the start (Join or JoinOnStart send join
// events, but there is no join-request, MIC, key or frame-counter
// validation, and a Class-C device need not have sent an uplink first);
// no payload codec is configured, so an object field is encoded as no
// bytes (as ChirpStack does without a codec); the maximum payload size
// is a per-device constant, not derived from the data rate and the MAC
// commands; no MAC commands except a DevStatusAns with every
// Config.StatusEvery-th uplink (a status event); a device that has more
// queued does not hurry its next uplink (no FPending); the Class-C
// scheduler runs when there is something to do (an enqueue, a TX ack, a
// timeout), not on ChirpStack's one-second tick (GatewayDelay stands for
// that wait); events are delivered one at a time, in order (or, with
// HTTPConfig.Workers, each device's in order by one of that many
// posters), HTTP endpoints then MQTT (ChirpStack runs its integrations
// concurrently); MQTT is
// 3.1.1 (paho), without shared subscriptions; Class B, multicast, relays,
// roaming, location and integration events other than the six above are
// not simulated.
//
// # Tests
//
// New, then Start (or Serve); Addr is the gRPC listener. Enqueued,
// Transmissions, Commands and Events record what happened; WaitFor and
// Flush wait for events without sleeping. With a fixed Config.Seed, zero
// delays and the same calls, a run repeats exactly (ids, draws, events).
package chirpstack
