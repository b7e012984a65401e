package chirpstack

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/chirpstack/chirpstack/api/go/v4/integration"
)

// gatewayRefusal is the TX ack status of a refused transmission.
const gatewayRefusal = "TOO_LATE"

// minGatewayRetry is the least time before a Class-C device retries after
// a gateway refusal, so that a gateway that always refuses does not spin.
const minGatewayRetry = 100 * time.Millisecond

// device is the state ChirpStack keeps for one device, and the device's
// own. Every field is guarded by Sim.mu.
type device struct {
	cfg       Device
	eui       string
	devAddr   string
	queue     []*item // in enqueue order, as ChirpStack orders by created_at
	fCntUp    uint32
	aFCntDown uint32 // next application downlink frame counter
	busy      bool   // an item is with the gateway (between schedule and TX ack)
	lockUntil time.Time
	wake      *time.Timer // Class C: when to run the scheduler again
	wakeAt    time.Time
	// answerFor is the queue item the device owes an answer to (it
	// received it, confirmed); ackBit whether that answer acknowledges.
	answerFor string
	ackBit    bool
	poster    int // the index of the poster of its events in Sim.posters
}

// item is a queue item and ChirpStack's state of it.
type item struct {
	QueueItem
	pending      bool      // sent, confirmed, waiting for the device's ACK
	timeoutAfter time.Time // Class C: when a pending item times out
}

func (d *device) classC() bool { return d.cfg.Class == ClassC }

func (d *device) has(qi *item) bool { return slices.Contains(d.queue, qi) }

func (d *device) remove(qi *item) {
	if i := slices.Index(d.queue, qi); i >= 0 {
		d.queue = slices.Delete(d.queue, i, i+1)
	}
}

// boot starts the devices: joins, and the first periodic uplinks at random
// phases. Lock held.
func (s *Sim) boot() {
	for _, dev := range s.order {
		if s.cfg.JoinOnStart {
			s.join(dev)
		}
		if s.cfg.UplinkInterval > 0 {
			phase := time.Duration(s.rng.Int64N(int64(s.cfg.UplinkInterval)))
			s.periodic(dev, phase)
		}
	}
}

// periodic arms a device's next periodic uplink. Lock held.
func (s *Sim) periodic(dev *device, in time.Duration) {
	s.after(in, func() {
		var data [4]byte
		binary.BigEndian.PutUint32(data[:], dev.fCntUp+1)
		s.uplink(dev, s.cfg.UplinkFPort, data[:])
		s.periodic(dev, s.cfg.UplinkInterval)
	})
}

// join is an OTAA join of dev. Lock held.
func (s *Sim) join(dev *device) string {
	dedup := newUUID(s.idRng)
	dev.devAddr = fmt.Sprintf("%08x", s.idRng.Uint32()&0x01ffffff) // NetID type 0, NwkID 0
	dev.fCntUp, dev.aFCntDown = 0, 0
	dev.answerFor, dev.ackBit = "", false
	if s.cfg.FlushQueueOnJoin {
		dev.queue = nil
	}
	s.emit("join", dev, "", &integration.JoinEvent{
		DeduplicationId: dedup,
		Time:            nowPB(),
		DeviceInfo:      s.deviceInfo(dev),
		DevAddr:         dev.devAddr,
		RegionConfigId:  s.cfg.RegionConfigID,
	})
	return dedup
}

// uplink handles an uplink of dev as ChirpStack's uplink data flow does:
// a status event (when due), the up event, the ACK of a pending item, then
// the downlink opportunity of the answer. Lock held.
func (s *Sim) uplink(dev *device, fPort uint32, data []byte) string {
	dedup := newUUID(s.idRng)
	dev.fCntUp++
	s.stats.Uplinks++
	ack := dev.answerFor != "" && dev.ackBit
	dev.answerFor, dev.ackBit = "", false
	if n := s.cfg.StatusEvery; n > 0 && dev.fCntUp%uint32(n) == 0 {
		s.emit("status", dev, "", &integration.StatusEvent{
			DeduplicationId: dedup,
			Time:            nowPB(),
			DeviceInfo:      s.deviceInfo(dev),
			Margin:          10,
			BatteryLevel:    float32(200) / 254 * 100,
		})
	}
	s.emit("up", dev, "", &integration.UplinkEvent{
		DeduplicationId: dedup,
		Time:            nowPB(),
		DeviceInfo:      s.deviceInfo(dev),
		DevAddr:         dev.devAddr,
		Adr:             true,
		Dr:              0,
		FCnt:            dev.fCntUp,
		FPort:           fPort,
		Data:            data,
		RxInfo:          s.rxInfo(),
		TxInfo:          uplinkTxInfo(),
		RegionConfigId:  s.cfg.RegionConfigID,
	})
	if ack {
		for _, qi := range dev.queue {
			if qi.pending {
				dev.remove(qi)
				s.stats.Acked++
				s.emit("ack", dev, qi.ID, &integration.AckEvent{
					DeduplicationId: dedup,
					Time:            nowPB(),
					DeviceInfo:      s.deviceInfo(dev),
					QueueItemId:     qi.ID,
					Acknowledged:    true,
					FCntDown:        qi.FCntDown,
				})
				break
			}
		}
	}
	if !dev.busy {
		if qi, _ := s.nextItem(dev, dedup); qi != nil {
			s.transmit(dev, qi, true)
		}
	}
	return dedup
}

// enqueue adds qi to dev's queue. Lock held.
func (s *Sim) enqueue(dev *device, qi *item) {
	dev.queue = append(dev.queue, qi)
	s.stats.Enqueued++
	if !s.cfg.DisableRecords {
		s.items = append(s.items, qi.QueueItem)
		s.notify()
	}
	if dev.classC() {
		s.later(func() { s.scheduleC(dev) })
	}
}

// hasItem reports whether a queue holds an item with this id. Lock held.
func (s *Sim) hasItem(id string) bool {
	for _, dev := range s.order {
		for _, qi := range dev.queue {
			if qi.ID == id {
				return true
			}
		}
	}
	return false
}

// flush empties dev's queue, or only its items that are not pending.
// Lock held.
func (s *Sim) flush(dev *device, keepPending bool) {
	if !keepPending {
		dev.queue = nil
		return
	}
	dev.queue = slices.DeleteFunc(dev.queue, func(qi *item) bool { return !qi.pending })
}

// nextItem returns the queue item to send at this downlink opportunity, as
// ChirpStack's get_next_device_queue_item does: it drops, one after the
// other, a pending item that timed out (ack acknowledged=false), an
// expired item (log EXPIRED), one too large (log DOWNLINK_PAYLOAD_SIZE) and
// an encrypted one whose frame counter was used (log F_CNT_DOWN). With a
// pending item not yet timed out it returns nil and that item's timeout.
// dedup is the uplink's deduplication id ("" for the Class-C scheduler).
// Lock held.
func (s *Sim) nextItem(dev *device, dedup string) (*item, time.Time) {
	for len(dev.queue) > 0 {
		qi := dev.queue[0]
		now := time.Now()
		if qi.pending && !qi.timeoutAfter.IsZero() && qi.timeoutAfter.After(now) {
			return nil, qi.timeoutAfter
		}
		expired := !qi.ExpiresAt.IsZero() && qi.ExpiresAt.Before(now)
		oversize := len(qi.Data) > dev.cfg.MaxPayload
		staleFCnt := qi.IsEncrypted && qi.FCntDown < dev.aFCntDown
		if !qi.pending && !expired && !oversize && !staleFCnt {
			return qi, time.Time{}
		}
		dev.queue = dev.queue[1:]
		switch {
		case qi.pending:
			s.stats.Nacked++
			s.emit("ack", dev, qi.ID, &integration.AckEvent{
				DeduplicationId: dedup,
				Time:            nowPB(),
				DeviceInfo:      s.deviceInfo(dev),
				QueueItemId:     qi.ID,
				Acknowledged:    false,
				FCntDown:        qi.FCntDown,
			})
		case expired:
			s.stats.Expired++
			s.logEvent(dev, qi.ID, integration.LogCode_EXPIRED,
				"Device queue-item discarded because it has expired",
				map[string]string{"queue_item_id": qi.ID})
		case oversize:
			s.stats.Oversize++
			s.logEvent(dev, qi.ID, integration.LogCode_DOWNLINK_PAYLOAD_SIZE,
				"Device queue-item discarded because it exceeds the max. payload size",
				map[string]string{
					"max_payload_size": strconv.Itoa(dev.cfg.MaxPayload),
					"item_size":        strconv.Itoa(len(qi.Data)),
					"queue_item_id":    qi.ID,
				})
		default:
			s.stats.FCntDown++
			s.logEvent(dev, qi.ID, integration.LogCode_F_CNT_DOWN,
				"Device queue-item discarded because the frame-counter is invalid",
				map[string]string{
					"device_f_cnt_down":     strconv.FormatUint(uint64(dev.aFCntDown), 10),
					"queue_item_f_cnt_down": strconv.FormatUint(uint64(qi.FCntDown), 10),
					"queue_item_id":         qi.ID,
				})
		}
	}
	return nil, time.Time{}
}

// scheduleC is ChirpStack's Class-B/C scheduler for one device: when the
// device is not locked and nothing waits for the gateway, send the next
// item. Lock held.
func (s *Sim) scheduleC(dev *device) {
	if !dev.classC() || dev.busy {
		return
	}
	if now := time.Now(); now.Before(dev.lockUntil) {
		s.wakeC(dev, dev.lockUntil)
		return
	}
	qi, wake := s.nextItem(dev, "")
	if qi != nil {
		if s.cfg.ClassCLock > 0 {
			dev.lockUntil = time.Now().Add(s.cfg.ClassCLock)
		}
		s.transmit(dev, qi, false)
		return
	}
	if !wake.IsZero() {
		s.wakeC(dev, wake)
	}
}

// wakeC runs the scheduler for dev at t (or earlier, if it already will).
// Lock held.
func (s *Sim) wakeC(dev *device, t time.Time) {
	if dev.wake != nil && !dev.wakeAt.After(t) {
		return
	}
	s.stopTimer(dev.wake)
	dev.wakeAt = t
	var tm *time.Timer
	tm = s.after(time.Until(t), func() {
		if dev.wake == tm {
			dev.wake, dev.wakeAt = nil, time.Time{}
		}
		s.scheduleC(dev)
	})
	dev.wake = tm
}

// transmit hands qi to the gateway: its frame counter is set now, the TX
// acknowledgement comes after the gateway delay. rx1 is a Class-A answer
// to an uplink; else a Class-C transmission from the scheduler. Lock held.
func (s *Sim) transmit(dev *device, qi *item, rx1 bool) {
	if !qi.IsEncrypted {
		qi.FCntDown = dev.aFCntDown
	}
	dev.busy = true
	downlinkID := s.idRng.Uint32()
	s.after(s.cfg.GatewayDelay, func() { s.txAck(dev, qi, downlinkID, rx1) })
}

// txAck is the gateway's TX acknowledgement of qi, handled as ChirpStack's
// tx_ack flow does, and then the device's reaction. Lock held.
func (s *Sim) txAck(dev *device, qi *item, downlinkID uint32, rx1 bool) {
	dev.busy = false
	tx := Transmission{
		QueueItemID: qi.ID, DevEUI: dev.eui, DownlinkID: downlinkID,
		FCntDown: qi.FCntDown, Confirmed: qi.Confirmed, At: time.Now(),
	}
	defer func() {
		if !s.cfg.DisableRecords {
			s.txs = append(s.txs, tx)
			s.notify()
		}
		if dev.classC() {
			s.later(func() { s.scheduleC(dev) })
		}
	}()
	if !dev.has(qi) {
		// Flushed while with the gateway: ChirpStack fails to load the
		// item and sends no event.
		tx.Flushed = true
		return
	}
	if s.cfg.GatewayErrorRate > 0 && s.rng.Float64() < s.cfg.GatewayErrorRate {
		tx.GatewayError = gatewayRefusal
		s.stats.GatewayErrors++
		s.logEvent(dev, "", integration.LogCode_DOWNLINK_GATEWAY, gatewayRefusal, nil)
		if dev.classC() {
			wait := max(s.cfg.ClassCLock, minGatewayRetry)
			dev.lockUntil = time.Now().Add(wait)
		}
		return
	}
	now := time.Now()
	if !qi.Confirmed {
		dev.remove(qi)
	} else {
		qi.pending = true
		if dev.classC() {
			qi.timeoutAfter = now.Add(s.cfg.ClassCTimeout)
			s.wakeC(dev, qi.timeoutAfter)
		}
	}
	dev.aFCntDown = qi.FCntDown + 1
	s.stats.Transmitted++
	s.emit("txack", dev, qi.ID, &integration.TxAckEvent{
		DownlinkId:  downlinkID,
		Time:        nowPB(),
		DeviceInfo:  s.deviceInfo(dev),
		QueueItemId: qi.ID,
		FCntDown:    qi.FCntDown,
		GatewayId:   s.cfg.GatewayID,
		TxInfo:      downlinkTxInfo(rx1),
	})

	// The device.
	tx.Lost = s.cfg.Loss > 0 && s.rng.Float64() < s.cfg.Loss
	if tx.Lost {
		s.stats.Lost++
		return
	}
	if !qi.Confirmed {
		return
	}
	tx.Nack = s.cfg.NackRate > 0 && s.rng.Float64() < s.cfg.NackRate
	dev.answerFor, dev.ackBit = qi.ID, !tx.Nack
	if s.cfg.AckDelay >= 0 {
		id := qi.ID
		s.after(s.cfg.AckDelay, func() {
			if dev.answerFor == id { // not answered by another uplink meanwhile
				s.uplink(dev, 0, nil)
			}
		})
	}
}

// logEvent emits a log event of level ERROR. Lock held.
func (s *Sim) logEvent(dev *device, queueItemID string, code integration.LogCode, description string, context map[string]string) {
	s.emit("log", dev, queueItemID, &integration.LogEvent{
		Time:        nowPB(),
		DeviceInfo:  s.deviceInfo(dev),
		Level:       integration.LogLevel_ERROR,
		Code:        code,
		Description: description,
		Context:     context,
	})
}
