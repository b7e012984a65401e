package reticulum

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// ResourceStatus is the outcome of a resource transfer.
type ResourceStatus int

// Resource states.
const (
	ResourceTransferring ResourceStatus = iota
	ResourceComplete                    // the receiver proved it has the data
	ResourceRejected                    // the receiver declined the advertisement
	ResourceFailed                      // timed out, cancelled, or the link closed
)

func (s ResourceStatus) String() string {
	switch s {
	case ResourceTransferring:
		return "transferring"
	case ResourceComplete:
		return "complete"
	case ResourceRejected:
		return "rejected"
	}
	return "failed"
}

// Resource is an outgoing transfer of data larger than one packet over a
// link. It concludes once: complete when the receiver's proof arrives.
type Resource struct {
	out *outgoingResource
}

// Hash is the resource hash (SHA-256 of the data and the random hash).
func (r *Resource) Hash() [FullHashLen]byte { return r.out.hash }

// Done is closed when the transfer concludes.
func (r *Resource) Done() <-chan struct{} { return r.out.done }

// Sent is closed once every part has been sent to the receiver (the
// transfer then waits for its proof), or when the transfer concludes
// before that.
func (r *Resource) Sent() <-chan struct{} { return r.out.allSent }

// Status returns the transfer's state.
func (r *Resource) Status() ResourceStatus {
	r.out.link.mu.Lock()
	defer r.out.link.mu.Unlock()
	return r.out.status
}

// Wait blocks until the transfer concludes or ctx ends.
func (r *Resource) Wait(ctx context.Context) ResourceStatus {
	select {
	case <-r.out.done:
	case <-ctx.Done():
	}
	return r.Status()
}

// Sender-side timing (the reference's MAX_ADV_RETRIES, SENDER_GRACE_TIME).
const (
	maxAdvRetries     = 4
	senderGrace       = 10 * time.Second
	resourceMinWindow = 5 * time.Second
)

// outgoingResource is the sender's state. Fields after link are guarded by
// link.mu.
type outgoingResource struct {
	link          *Link
	hash          [FullHashLen]byte
	randomHash    []byte
	expectedProof [FullHashLen]byte
	parts         [][]byte
	mapHashes     [][]byte
	adv           *advertisement

	status       ResourceStatus
	sent         []bool
	sentCount    int
	minHeight    int
	lastActivity time.Time
	advRetries   int
	requested    bool
	once         sync.Once
	done         chan struct{}
	sentOnce     sync.Once
	allSent      chan struct{}
}

// SendResource advertises data (at most MaxResourceSize bytes, sent without
// compression) to the peer and transfers it as the peer requests parts. It
// returns once the advertisement is sent.
func (l *Link) SendResource(data []byte) (*Resource, error) {
	if len(data) > MaxResourceSize {
		return nil, errors.New("reticulum: resource too large (segmented resources are not supported)")
	}
	if l.Status() != LinkActive {
		return nil, ErrClosed
	}
	prefix := make([]byte, resourceRandomLen)
	if _, err := rand.Read(prefix); err != nil {
		return nil, err
	}
	enc, err := l.tok.encrypt(append(prefix, data...))
	if err != nil {
		return nil, err
	}
	o, err := newOutgoingResource(l, data, enc)
	if err != nil {
		return nil, err
	}
	advPlain, err := o.adv.marshal()
	if err != nil {
		return nil, err
	}
	p, err := l.encryptedPacket(CtxResourceAdv, advPlain)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	o.lastActivity = l.node.clock.Now()
	l.outgoing[o.hash] = o
	l.mu.Unlock()
	if err := l.sendPacket(p); err != nil {
		o.conclude(ResourceFailed)
		return nil, err
	}
	return &Resource{out: o}, nil
}

// newOutgoingResource splits the encrypted data into parts and builds the
// hashmap and advertisement, drawing a new random hash until no two map
// hashes collide.
func newOutgoingResource(l *Link, data, enc []byte) (*outgoingResource, error) {
	for {
		rh := make([]byte, resourceRandomLen)
		if _, err := rand.Read(rh); err != nil {
			return nil, err
		}
		if o := splitResource(l, data, enc, rh); o != nil {
			return o, nil
		}
	}
}

// splitResource builds the outgoing resource with random hash rh, or
// returns nil if two parts' map hashes collide.
func splitResource(l *Link, data, enc, rh []byte) *outgoingResource {
	o := &outgoingResource{link: l, done: make(chan struct{}), allSent: make(chan struct{}), status: ResourceTransferring, randomHash: rh}
	if !o.split(enc, l.mtu-headerMaxSize-ifacMinSize) {
		return nil
	}
	o.hash = FullHash(data, o.randomHash)
	o.expectedProof = FullHash(data, o.hash[:])
	o.sent = make([]bool, len(o.parts))
	o.adv = &advertisement{
		TransferSize: len(enc), DataSize: len(data), Parts: len(o.parts),
		Hash: o.hash[:], RandomHash: o.randomHash, OriginalHash: o.hash[:],
		Segment: 1, Segments: 1, Flags: advEncrypted, Hashmap: o.hashmapSegment(0),
	}
	return o
}

// split cuts enc into parts and reports whether their map hashes are unique.
func (o *outgoingResource) split(enc []byte, sdu int) bool {
	o.parts, o.mapHashes = nil, nil
	seen := map[string]bool{}
	for i := 0; i < len(enc); i += sdu {
		part := enc[i:min(i+sdu, len(enc))]
		mh := mapHash(part, o.randomHash)
		if seen[string(mh)] {
			return false
		}
		seen[string(mh)] = true
		o.parts = append(o.parts, part)
		o.mapHashes = append(o.mapHashes, mh)
	}
	return true
}

// hashmapSegment returns the map hashes of hashmap segment seg.
func (o *outgoingResource) hashmapSegment(seg int) []byte {
	var out []byte
	for i := seg * hashmapMaxLen; i < min((seg+1)*hashmapMaxLen, len(o.parts)); i++ {
		out = append(out, o.mapHashes[i]...)
	}
	return out
}

// conclude ends the transfer with status s: Sent is closed before Done, so
// that whoever Done wakes finds Sent closed too.
func (o *outgoingResource) conclude(s ResourceStatus) {
	o.once.Do(func() {
		o.link.mu.Lock()
		o.status = s
		delete(o.link.outgoing, o.hash)
		o.link.mu.Unlock()
		o.markSent()
		close(o.done)
	})
}

// markSent records that every part went out (or that none will).
func (o *outgoingResource) markSent() { o.sentOnce.Do(func() { close(o.allSent) }) }

// receiveRequest sends the parts a receiver asked for, and the next hashmap
// segment when it ran out of map hashes.
func (l *Link) receiveRequest(pt []byte, _ *Packet) {
	if len(pt) < 1+FullHashLen {
		return
	}
	wantsMore := pt[0] == hashmapExhausted
	pad := 1
	if wantsMore {
		pad += mapHashLen
	}
	if len(pt) < pad+FullHashLen {
		return
	}
	var h [FullHashLen]byte
	copy(h[:], pt[pad:])
	l.mu.Lock()
	o := l.outgoing[h]
	if o == nil {
		l.mu.Unlock()
		return
	}
	o.lastActivity = l.node.clock.Now()
	o.requested = true
	requested := pt[pad+FullHashLen:]
	var send [][]byte
	for i := o.minHeight; i < min(o.minHeight+collisionGuardSize, len(o.parts)); i++ {
		for j := 0; j+mapHashLen <= len(requested); j += mapHashLen {
			if bytes.Equal(o.mapHashes[i], requested[j:j+mapHashLen]) {
				send = append(send, o.parts[i])
				if !o.sent[i] {
					o.sent[i] = true
					o.sentCount++
				}
				break
			}
		}
	}
	var hmu []byte
	if wantsMore {
		last := pt[1 : 1+mapHashLen]
		idx := o.minHeight
		for i := o.minHeight; i < min(o.minHeight+collisionGuardSize, len(o.parts)); i++ {
			idx++
			if bytes.Equal(o.mapHashes[i], last) {
				break
			}
		}
		o.minHeight = max(idx-1-resourceWindowMax, 0)
		if idx%hashmapMaxLen == 0 {
			seg := idx / hashmapMaxLen
			if b, err := msgpack.Marshal([]any{seg, o.hashmapSegment(seg)}); err == nil {
				hmu = append(h[:], b...)
			}
		}
	}
	all := o.sentCount == len(o.parts)
	l.mu.Unlock()
	for _, part := range send {
		l.sendPacket(&Packet{PacketType: PacketData, DestType: DestLink, Destination: l.id, Context: CtxResource, Data: part})
	}
	if hmu != nil {
		if p, err := l.encryptedPacket(CtxResourceHMU, hmu); err == nil {
			l.sendPacket(p)
		}
	}
	if all {
		o.markSent()
	}
}

// receiveResourceProof completes an outgoing resource whose proof matches.
func (l *Link) receiveResourceProof(data []byte) {
	if len(data) != 2*FullHashLen {
		return
	}
	var h [FullHashLen]byte
	copy(h[:], data)
	l.mu.Lock()
	o := l.outgoing[h]
	l.mu.Unlock()
	if o != nil && bytes.Equal(data[FullHashLen:], o.expectedProof[:]) {
		o.conclude(ResourceComplete)
	}
}

// receiveReceiverCancel handles the receiver declining or cancelling.
func (l *Link) receiveReceiverCancel(pt []byte) {
	if len(pt) < FullHashLen {
		return
	}
	var h [FullHashLen]byte
	copy(h[:], pt)
	l.mu.Lock()
	o := l.outgoing[h]
	l.mu.Unlock()
	if o != nil {
		o.conclude(ResourceRejected)
	}
}

// outgoingWatchdog re-sends an unanswered advertisement up to the
// reference's retry count, and fails transfers that went quiet.
func (l *Link) outgoingWatchdog(now time.Time) {
	l.mu.Lock()
	wait := max(l.rtt*trafficTimeoutFactor, resourceMinWindow)
	var readvertise []*outgoingResource
	var failed []*outgoingResource
	for _, o := range l.outgoing {
		idle := now.Sub(o.lastActivity)
		switch {
		case !o.requested && idle >= wait && o.advRetries < maxAdvRetries:
			o.advRetries++
			o.lastActivity = now
			readvertise = append(readvertise, o)
		case !o.requested && idle >= wait:
			failed = append(failed, o)
		case o.requested && idle >= 4*wait+senderGrace:
			failed = append(failed, o)
		}
	}
	l.mu.Unlock()
	for _, o := range readvertise {
		if b, err := o.adv.marshal(); err == nil {
			if p, err := l.encryptedPacket(CtxResourceAdv, b); err == nil {
				l.sendPacket(p)
			}
		}
	}
	for _, o := range failed {
		if p, err := l.encryptedPacket(CtxResourceICL, o.hash[:]); err == nil {
			l.sendPacket(p)
		}
		o.conclude(ResourceFailed)
	}
}
