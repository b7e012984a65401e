package reticulum

import (
	"bytes"
	"compress/bzip2"
	"errors"
	"io"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Receiver-side constants of the reference.
const (
	resourceWindow         = 4
	resourceWindowMaxSlow  = 10
	resourceMaxRetries     = 16
	resourcePartTimeoutFac = 4
)

// incomingResource is the receiver's state, guarded by link.mu.
type incomingResource struct {
	adv          *advertisement
	hash         [FullHashLen]byte
	hashmap      [][]byte
	parts        [][]byte
	received     int
	consecutive  int // index of the last part received in order, -1 for none
	window       int
	outstanding  int
	waitingHMU   bool
	lastActivity time.Time
	retries      int
	assembling   bool
}

// receiveAdvertisement accepts or declines an advertised resource.
func (l *Link) receiveAdvertisement(pt []byte, h LinkHandlers) {
	a, err := parseAdvertisement(pt)
	if err != nil {
		l.node.log.Debug("reticulum: bad resource advertisement", "link", l.id, "err", err)
		return
	}
	accept := a.Segments == 1 && a.Flags&advSplit == 0 && a.Flags&advEncrypted != 0 && a.DataSize <= MaxResourceSize
	if accept && h.ResourceFilter != nil {
		accept = h.ResourceFilter(l, a.DataSize)
	}
	if !accept {
		if p, err := l.encryptedPacket(CtxResourceRCL, a.Hash); err == nil {
			l.sendPacket(p)
		}
		return
	}
	in := &incomingResource{
		adv: a, hashmap: make([][]byte, a.Parts), parts: make([][]byte, a.Parts),
		consecutive: -1, window: resourceWindow, lastActivity: l.node.clock.Now(),
	}
	copy(in.hash[:], a.Hash)
	l.mu.Lock()
	if _, dup := l.incoming[in.hash]; dup {
		l.mu.Unlock()
		return
	}
	l.incoming[in.hash] = in
	in.updateHashmap(0, a.Hashmap)
	req := l.nextRequest(in)
	l.mu.Unlock()
	l.sendRequest(req)
}

// updateHashmap stores one hashmap segment's map hashes.
func (in *incomingResource) updateHashmap(seg int, hm []byte) {
	for i := 0; i*mapHashLen < len(hm); i++ {
		if idx := seg*hashmapMaxLen + i; idx < len(in.hashmap) {
			in.hashmap[idx] = hm[i*mapHashLen : (i+1)*mapHashLen]
		}
	}
	in.waitingHMU = false
}

// nextRequest builds the request for the next window of parts (nil while a
// hashmap update is awaited). Callers hold l.mu.
func (l *Link) nextRequest(in *incomingResource) []byte {
	if in.waitingHMU {
		return nil
	}
	in.outstanding = 0
	exhausted := false
	var hashes []byte
	for pn := in.consecutive + 1; pn < min(in.consecutive+1+in.window, len(in.parts)); pn++ {
		if in.parts[pn] != nil {
			continue
		}
		if in.hashmap[pn] == nil {
			exhausted = true
			break
		}
		hashes = append(hashes, in.hashmap[pn]...)
		in.outstanding++
	}
	req := []byte{hashmapNotExhausted}
	if exhausted {
		last := 0
		for i, m := range in.hashmap {
			if m != nil {
				last = i
			}
		}
		req = append([]byte{hashmapExhausted}, in.hashmap[last]...)
		in.waitingHMU = true
	}
	req = append(req, in.hash[:]...)
	return append(req, hashes...)
}

func (l *Link) sendRequest(req []byte) {
	if req == nil {
		return
	}
	if p, err := l.encryptedPacket(CtxResourceReq, req); err == nil {
		l.sendPacket(p)
	}
}

// receivePart stores a part of an incoming resource, requesting the next
// window when this one is complete and assembling when all parts are in.
func (l *Link) receivePart(p *Packet) {
	l.mu.Lock()
	var req []byte
	var done *incomingResource
	for _, in := range l.incoming {
		mh := mapHash(p.Data, in.adv.RandomHash)
		start := max(in.consecutive, 0)
		for i := start; i < min(start+in.window, len(in.parts)); i++ {
			if in.hashmap[i] == nil || !bytes.Equal(in.hashmap[i], mh) || in.parts[i] != nil {
				continue
			}
			in.parts[i] = append([]byte{}, p.Data...)
			in.received++
			in.outstanding--
			in.lastActivity = l.node.clock.Now()
			in.retries = 0
			for in.consecutive+1 < len(in.parts) && in.parts[in.consecutive+1] != nil {
				in.consecutive++
			}
			break
		}
		if in.received == len(in.parts) && !in.assembling {
			in.assembling = true
			done = in
		} else if in.outstanding <= 0 && in.received < len(in.parts) && !in.assembling {
			if in.window < resourceWindowMaxSlow {
				in.window++
			}
			req = l.nextRequest(in)
		}
	}
	l.mu.Unlock()
	l.sendRequest(req)
	if done != nil {
		l.assemble(done)
	}
}

// receiveHashmapUpdate takes the next hashmap segment from the sender.
func (l *Link) receiveHashmapUpdate(pt []byte) {
	if len(pt) <= FullHashLen {
		return
	}
	var h [FullHashLen]byte
	copy(h[:], pt)
	var upd []any
	if err := msgpack.Unmarshal(pt[FullHashLen:], &upd); err != nil || len(upd) != 2 {
		return
	}
	seg, ok := asInt(upd[0])
	hm, ok2 := upd[1].([]byte)
	if !ok || !ok2 {
		return
	}
	l.mu.Lock()
	in := l.incoming[h]
	var req []byte
	if in != nil && in.waitingHMU {
		in.lastActivity = l.node.clock.Now()
		in.updateHashmap(seg, hm)
		req = l.nextRequest(in)
	}
	l.mu.Unlock()
	l.sendRequest(req)
}

// receiveInitiatorCancel drops an incoming resource the sender cancelled.
func (l *Link) receiveInitiatorCancel(pt []byte) {
	if len(pt) < FullHashLen {
		return
	}
	var h [FullHashLen]byte
	copy(h[:], pt)
	l.mu.Lock()
	delete(l.incoming, h)
	l.mu.Unlock()
}

// assemble decrypts, decompresses and checks a complete resource, proves
// it, and hands the data to the Resource handler.
func (l *Link) assemble(in *incomingResource) {
	l.mu.Lock()
	delete(l.incoming, in.hash)
	h := l.handlers
	l.mu.Unlock()
	data, err := l.resourceData(in)
	if err != nil {
		l.node.log.Debug("reticulum: corrupt resource", "link", l.id, "err", err)
		if p, err := l.encryptedPacket(CtxResourceRCL, in.hash[:]); err == nil {
			l.sendPacket(p)
		}
		return
	}
	proof := FullHash(data, in.hash[:])
	l.sendPacket(&Packet{PacketType: PacketProof, DestType: DestLink, Destination: l.id, Context: CtxResourcePRF, Data: append(in.hash[:], proof[:]...)})
	if in.adv.Flags&advMetadata != 0 {
		if len(data) < 3 {
			return
		}
		n := int(data[0])<<16 | int(data[1])<<8 | int(data[2])
		if len(data) < 3+n {
			return
		}
		data = data[3+n:]
	}
	if h.Resource != nil {
		h.Resource(l, data)
	}
}

func (l *Link) resourceData(in *incomingResource) ([]byte, error) {
	stream := bytes.Join(in.parts, nil)
	plain, err := l.tok.decrypt(stream)
	if err != nil {
		return nil, err
	}
	if len(plain) < resourceRandomLen {
		return nil, errors.New("reticulum: resource too short")
	}
	data := plain[resourceRandomLen:]
	if in.adv.Flags&advCompressed != 0 {
		r := io.LimitReader(bzip2.NewReader(bytes.NewReader(data)), int64(in.adv.DataSize)+1)
		if data, err = io.ReadAll(r); err != nil {
			return nil, err
		}
		if len(data) > in.adv.DataSize {
			return nil, errors.New("reticulum: resource larger than advertised")
		}
	}
	if FullHash(data, in.adv.RandomHash) != in.hash {
		return nil, errors.New("reticulum: resource hash mismatch")
	}
	return data, nil
}

// resourceWatchdog re-requests parts of quiet incoming resources, gives up
// on them after the reference's retry count, and runs the sender side's
// timeouts.
func (l *Link) resourceWatchdog(now time.Time) {
	l.mu.Lock()
	wait := max(l.rtt*resourcePartTimeoutFac, resourceMinWindow)
	var reqs [][]byte
	var cancel [][FullHashLen]byte
	for h, in := range l.incoming {
		if in.assembling || now.Sub(in.lastActivity) < wait {
			continue
		}
		in.retries++
		in.lastActivity = now
		if in.retries > resourceMaxRetries {
			delete(l.incoming, h)
			cancel = append(cancel, h)
			continue
		}
		in.waitingHMU = false
		in.window = max(in.window-1, 1)
		reqs = append(reqs, l.nextRequest(in))
	}
	l.mu.Unlock()
	for _, r := range reqs {
		l.sendRequest(r)
	}
	for _, h := range cancel {
		if p, err := l.encryptedPacket(CtxResourceRCL, h[:]); err == nil {
			l.sendPacket(p)
		}
	}
	l.outgoingWatchdog(now)
}
