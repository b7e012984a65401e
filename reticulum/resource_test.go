package reticulum

import (
	"bytes"
	"sync"
	"testing"
)

func TestResourceKnownAnswers(t *testing.T) {
	var k linkKAT
	loadKAT(t, "link.json", &k)
	v := k.Resource
	key := unhex(t, k.Link.DerivedKey)
	tok, _ := newToken(key)
	id, _ := HashFromBytes(unhex(t, k.Link.LinkID))
	l := &Link{id: id, tok: tok, mtu: MTU}

	// The advertisement parses and re-marshals to the same bytes.
	_, advPlain := reencrypt(t, tok, "advertisement", v.AdvPacket)
	hexEq(t, "advertisement plaintext", advPlain, v.AdvPlaintext)
	a, err := parseAdvertisement(advPlain)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := a.marshal()
	hexEq(t, "advertisement re-marshalled", b, v.AdvPlaintext)

	// Building the resource with the reference's randomness gives the
	// reference's parts and advertisement.
	var stream []byte
	for _, ph := range v.Parts {
		stream = append(stream, mustParse(t, ph).Data...)
	}
	plain, err := tok.decrypt(stream)
	if err != nil {
		t.Fatal(err)
	}
	data := unhex(t, v.Data)
	if !bytes.Equal(plain[4:], data) {
		t.Fatal("decrypted resource differs from its data")
	}
	enc, _ := tok.encryptIV(stream[:16], plain)
	o := splitResource(l, data, enc, unhex(t, v.RandomHash))
	if o == nil || len(o.parts) != len(v.Parts) {
		t.Fatalf("split into %d parts, want %d", len(o.parts), len(v.Parts))
	}
	for i, part := range o.parts {
		p := &Packet{PacketType: PacketData, DestType: DestLink, Destination: id, Context: CtxResource, Data: part}
		raw, _ := p.Marshal()
		hexEq(t, "part", raw, v.Parts[i])
	}
	hexEq(t, "resource hash", o.hash[:], v.Hash)
	hexEq(t, "expected proof", o.expectedProof[:], v.ExpectedProof)
	b, _ = o.adv.marshal()
	hexEq(t, "built advertisement", b, v.AdvPlaintext)

	// The receiver's first request equals the reference's.
	in := &incomingResource{adv: a, hashmap: make([][]byte, a.Parts), parts: make([][]byte, a.Parts), consecutive: -1, window: resourceWindow}
	copy(in.hash[:], a.Hash)
	in.updateHashmap(0, a.Hashmap)
	_, reqPlain := reencrypt(t, tok, "request", v.RequestPacket)
	hexEq(t, "first request", l.nextRequest(in), hexString(reqPlain))

	// The proof.
	proof := FullHash(data, o.hash[:])
	pp := &Packet{PacketType: PacketProof, DestType: DestLink, Destination: id, Context: CtxResourcePRF, Data: append(o.hash[:], proof[:]...)}
	raw, _ := pp.Marshal()
	hexEq(t, "resource proof", raw, v.ProofPacket)
}

// activeTestLink registers an active link with the vector's key on n.
func activeTestLink(t *testing.T, n *Node, k linkKAT, initiator bool, h LinkHandlers) *Link {
	t.Helper()
	id, _ := HashFromBytes(unhex(t, k.Link.LinkID))
	tok, _ := newToken(unhex(t, k.Link.DerivedKey))
	l := newLink(n, id, initiator)
	l.tok, l.status, l.handlers = tok, LinkActive, h
	n.mu.Lock()
	n.links[id] = l
	n.mu.Unlock()
	return l
}

func TestReceiveCompressedResourceFromReference(t *testing.T) {
	var k linkKAT
	loadKAT(t, "link.json", &k)
	ifc, far := NewPipe("node", "tap")
	tp := newTap(far)
	n := testNode(t, ifc, newFakeClock())
	var mu sync.Mutex
	var got []byte
	activeTestLink(t, n, k, true, LinkHandlers{Resource: func(_ *Link, d []byte) { mu.Lock(); got = d; mu.Unlock() }})
	n.inbound(unhex(t, k.Compressed.AdvPacket), ifc)
	eventually(t, "a part request", func() bool { return tp.withContext(CtxResourceReq) != nil })
	for _, part := range k.Compressed.Parts {
		n.inbound(unhex(t, part), ifc)
	}
	eventually(t, "the resource", func() bool { mu.Lock(); defer mu.Unlock(); return got != nil })
	if !bytes.Equal(got, unhex(t, k.Compressed.Data)) {
		t.Fatal("resource data differs")
	}
	eventually(t, "the resource proof", func() bool { return tp.withContext(CtxResourcePRF) != nil })
	proof := tp.withContext(CtxResourcePRF)
	hexEq(t, "proof data", proof.Data, k.Compressed.Hash+k.Compressed.ExpectedProof)
}
