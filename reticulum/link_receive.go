package reticulum

import (
	"bytes"
	"crypto/ed25519"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// validateLinkProof completes an initiated link when its LRPROOF arrives:
// it checks the signature, derives the key and sends the RTT packet.
func (l *Link) validateLinkProof(p *Packet) {
	l.mu.Lock()
	if !l.initiator || l.status != LinkPending {
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	peer, mtu, err := checkLRProof(p, l.id, l.destIdentity)
	if err != nil {
		l.node.log.Debug("reticulum: invalid link proof", "link", l.id, "err", err)
		return
	}
	key, err := linkKey(l.prv, peer, l.id)
	if err != nil {
		return
	}
	tok, _ := newToken(key)
	now := l.node.clock.Now()
	l.mu.Lock()
	if l.status != LinkPending {
		l.mu.Unlock()
		return
	}
	l.tok, l.mtu = tok, mtu
	l.rtt = now.Sub(l.requestTime)
	l.activate(now)
	rtt := l.rtt
	l.mu.Unlock()
	b, err := msgpack.Marshal(rtt.Seconds())
	if err == nil {
		if rp, err := l.encryptedPacket(CtxLRRTT, b); err == nil {
			l.sendPacket(rp)
		}
	}
	close(l.established)
}

// activate marks the link active and sets its keep-alive from the RTT, as
// the reference does. Callers hold l.mu.
func (l *Link) activate(now time.Time) {
	l.status = LinkActive
	l.activatedAt, l.lastInbound = now, now
	ka := time.Duration(float64(l.rtt) * (float64(keepaliveMax) / float64(time.Second) / keepaliveMaxRTT))
	l.keepalive = min(max(ka, keepaliveMin), keepaliveMax)
}

// receive handles a DATA packet addressed to the link.
func (l *Link) receive(p *Packet) {
	l.mu.Lock()
	if l.status == LinkClosed || (l.initiator && p.Context == CtxKeepalive && bytes.Equal(p.Data, []byte{0xFF})) {
		l.mu.Unlock()
		return
	}
	now := l.node.clock.Now()
	l.lastInbound = now
	if p.Context != CtxKeepalive {
		l.lastData = now
	}
	if l.status == LinkStale {
		l.status = LinkActive
	}
	h := l.handlers
	tok := l.tok
	l.mu.Unlock()
	if tok == nil {
		return
	}
	switch p.Context {
	case CtxResource:
		l.receivePart(p)
		return
	case CtxKeepalive:
		if !l.initiator && bytes.Equal(p.Data, []byte{0xFF}) {
			l.sendPacket(&Packet{PacketType: PacketData, DestType: DestLink, Destination: l.id, Context: CtxKeepalive, Data: []byte{0xFE}})
		}
		return
	}
	pt, err := tok.decrypt(p.Data)
	if err != nil {
		return
	}
	switch p.Context {
	case CtxNone:
		if h.Packet != nil {
			h.Packet(l, pt, p)
		}
	case CtxLRRTT:
		l.receiveRTT(pt, now)
	case CtxLinkIdentify:
		l.receiveIdentify(pt, h)
	case CtxLinkClose:
		if bytes.Equal(pt, l.id[:]) {
			reason := CloseInitiatorClosed
			if l.initiator {
				reason = CloseDestinationClosed
			}
			l.closeWith(reason, false)
		}
	case CtxResourceAdv:
		l.receiveAdvertisement(pt, h)
	case CtxResourceReq:
		l.receiveRequest(pt, p)
	case CtxResourceHMU:
		l.receiveHashmapUpdate(pt)
	case CtxResourceICL:
		l.receiveInitiatorCancel(pt)
	case CtxResourceRCL:
		l.receiveReceiverCancel(pt)
	}
}

func (l *Link) receiveRTT(pt []byte, now time.Time) {
	if l.initiator {
		return
	}
	var rtt float64
	if err := msgpack.Unmarshal(pt, &rtt); err != nil {
		return
	}
	l.mu.Lock()
	if l.status != LinkHandshake {
		l.mu.Unlock()
		return
	}
	l.rtt = max(now.Sub(l.requestTime), time.Duration(rtt*float64(time.Second)))
	l.activate(now)
	l.mu.Unlock()
	close(l.established)
}

func (l *Link) receiveIdentify(pt []byte, h LinkHandlers) {
	if l.initiator || len(pt) != PublicKeyLen+SignatureLen {
		return
	}
	id, err := IdentityFromPublicKey(pt[:PublicKeyLen])
	if err != nil || !id.Verify(pt[PublicKeyLen:], append(l.id.Bytes(), pt[:PublicKeyLen]...)) {
		return
	}
	l.mu.Lock()
	first := l.remote == nil
	if first {
		l.remote = id
	}
	l.mu.Unlock()
	if first && h.Identified != nil {
		h.Identified(l, id)
	}
}

// receiveProof handles a PROOF packet addressed to the link: a resource
// proof, or the explicit proof of a packet sent over the link.
func (l *Link) receiveProof(p *Packet) {
	l.mu.Lock()
	l.lastInbound = l.node.clock.Now()
	l.mu.Unlock()
	if p.Context == CtxResourcePRF {
		l.receiveResourceProof(p.Data)
		return
	}
	if len(p.Data) != explicitProofLen {
		return
	}
	var h [FullHashLen]byte
	copy(h[:], p.Data)
	l.mu.Lock()
	r := l.receipts[h]
	l.mu.Unlock()
	if r != nil && ed25519.Verify(l.peerSig, h[:], p.Data[FullHashLen:]) {
		l.mu.Lock()
		delete(l.receipts, h)
		l.mu.Unlock()
		r.conclude(ReceiptDelivered)
	}
}

// watchdog runs the link's timers: establishment timeout, keep-alives,
// staleness, inactivity teardown, receipt and resource timeouts.
func (l *Link) watchdog(now time.Time) {
	l.mu.Lock()
	var expired []*Receipt
	for k, r := range l.receipts {
		if now.After(r.deadline) {
			expired = append(expired, r)
			delete(l.receipts, k)
		}
	}
	status := l.status
	var action func()
	switch status {
	case LinkPending, LinkHandshake:
		if now.Sub(l.requestTime) >= l.establishTimeout {
			action = func() { l.closeWith(CloseTimeout, false) }
		}
	case LinkActive:
		lastIn := l.lastInbound
		if l.inactivity > 0 && now.Sub(l.lastData) >= l.inactivity {
			action = l.Close
		} else if now.Sub(lastIn) >= l.keepalive*staleFactor {
			l.status, l.staleAt = LinkStale, now
		} else if l.initiator && now.Sub(l.lastKeepalive) >= l.keepalive &&
			(now.Sub(lastIn) >= l.keepalive || now.Sub(l.lastOutbound) >= l.keepalive) {
			action = l.sendKeepalive
		}
	case LinkStale:
		if now.Sub(l.staleAt) >= l.rtt*keepaliveTimeoutFactor+staleGrace {
			action = func() { l.closeWith(CloseTimeout, true) }
		}
	}
	l.mu.Unlock()
	for _, r := range expired {
		r.conclude(ReceiptFailed)
	}
	l.resourceWatchdog(now)
	if action != nil {
		action()
	}
}

func (l *Link) sendKeepalive() {
	l.sendPacket(&Packet{PacketType: PacketData, DestType: DestLink, Destination: l.id, Context: CtxKeepalive, Data: []byte{0xFF}})
}
