package reticulum

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

type linkKAT struct {
	Link struct {
		Responder       string  `json:"responder_private_key"`
		InitX25519      string  `json:"initiator_x25519"`
		InitEd25519     string  `json:"initiator_ed25519"`
		RespX25519      string  `json:"responder_x25519"`
		LinkRequest     string  `json:"link_request"`
		LinkID          string  `json:"link_id"`
		LRProof         string  `json:"lrproof"`
		DerivedKey      string  `json:"derived_key"`
		RTTPacket       string  `json:"rtt_packet"`
		RTT             float64 `json:"rtt"`
		DataPacket      string  `json:"data_packet"`
		DataPlaintext   string  `json:"data_plaintext"`
		DataProof       string  `json:"data_proof"`
		IdentifyPacket  string  `json:"identify_packet"`
		IdentifyPrivate string  `json:"identify_private_key"`
		KeepalivePacket string  `json:"keepalive_packet"`
		ClosePacket     string  `json:"close_packet"`
	} `json:"link"`
	Resource struct {
		Data          string   `json:"data"`
		AdvPacket     string   `json:"advertisement_packet"`
		AdvPlaintext  string   `json:"advertisement_plaintext"`
		Parts         []string `json:"parts"`
		RequestPacket string   `json:"request_packet"`
		ProofPacket   string   `json:"proof_packet"`
		Hash          string   `json:"resource_hash"`
		RandomHash    string   `json:"random_hash"`
		ExpectedProof string   `json:"expected_proof"`
	} `json:"resource"`
	Compressed struct {
		Data          string   `json:"data"`
		AdvPacket     string   `json:"advertisement_packet"`
		Parts         []string `json:"parts"`
		Hash          string   `json:"resource_hash"`
		ExpectedProof string   `json:"expected_proof"`
	} `json:"compressed_resource"`
}

// reencrypt checks that a reference link packet decrypts under tok and
// that encrypting the plaintext with the same IV gives the same bytes.
func reencrypt(t *testing.T, tok *token, what, rawHex string) (*Packet, []byte) {
	t.Helper()
	p := mustParse(t, rawHex)
	pt, err := tok.decrypt(p.Data)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	ct, err := tok.encryptIV(p.Data[:16], pt)
	if err != nil {
		t.Fatal(err)
	}
	q := *p
	q.Data = ct
	raw, _ := q.Marshal()
	hexEq(t, what+" re-encrypted", raw, rawHex)
	return p, pt
}

func TestLinkKnownAnswers(t *testing.T) {
	var k linkKAT
	loadKAT(t, "link.json", &k)
	v := k.Link
	resp := mustIdentity(t, v.Responder)
	ix, rx := mustX25519(t, v.InitX25519), mustX25519(t, v.RespX25519)
	ied := ed25519.NewKeyFromSeed(unhex(t, v.InitEd25519))
	dest := DestinationHash(resp, "lxmf", "delivery")

	req := linkRequestPacket(dest, ix.PublicKey(), ied.Public().(ed25519.PublicKey), MTU)
	raw, _ := req.Marshal()
	hexEq(t, "link request", raw, v.LinkRequest)
	id := LinkID(mustParse(t, v.LinkRequest))
	hexEq(t, "link id", id[:], v.LinkID)

	proof, err := lrProofPacket(id, resp, rx.PublicKey(), MTU)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = proof.Marshal()
	hexEq(t, "lrproof", raw, v.LRProof)
	respPub, _ := IdentityFromPublicKey(resp.PublicKey())
	peer, mtu, err := checkLRProof(mustParse(t, v.LRProof), id, respPub)
	if err != nil || mtu != MTU || !bytes.Equal(peer.Bytes(), rx.PublicKey().Bytes()) {
		t.Fatalf("reference lrproof rejected: %v mtu %d", err, mtu)
	}
	other, _ := NewIdentity()
	if _, _, err := checkLRProof(mustParse(t, v.LRProof), id, other); err == nil {
		t.Error("lrproof accepted for another identity")
	}

	k1, _ := linkKey(ix, rx.PublicKey(), id)
	k2, _ := linkKey(rx, ix.PublicKey(), id)
	hexEq(t, "initiator link key", k1, v.DerivedKey)
	hexEq(t, "responder link key", k2, v.DerivedKey)
	tok, _ := newToken(k1)

	_, rttPlain := reencrypt(t, tok, "rtt packet", v.RTTPacket)
	var rtt float64
	if err := msgpack.Unmarshal(rttPlain, &rtt); err != nil || rtt != v.RTT {
		t.Errorf("rtt %v %v, want %v", rtt, err, v.RTT)
	}
	if b, _ := msgpack.Marshal(v.RTT); !bytes.Equal(b, rttPlain) {
		t.Error("rtt msgpack differs")
	}

	dp, dataPlain := reencrypt(t, tok, "data packet", v.DataPacket)
	hexEq(t, "data plaintext", dataPlain, v.DataPlaintext)
	lp, err := linkProofPacket(resp.sigPriv, dp, id)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = lp.Marshal()
	hexEq(t, "link packet proof", raw, v.DataProof)

	_, idPlain := reencrypt(t, tok, "identify packet", v.IdentifyPacket)
	who := mustIdentity(t, v.IdentifyPrivate)
	if !bytes.Equal(idPlain[:64], who.PublicKey()) || !who.Verify(idPlain[64:], append(id.Bytes(), who.PublicKey()...)) {
		t.Error("identify packet does not carry a valid identity proof")
	}
	sig, _ := who.Sign(append(id.Bytes(), who.PublicKey()...))
	if !bytes.Equal(sig, idPlain[64:]) {
		t.Error("identify signature differs")
	}

	ka := &Packet{PacketType: PacketData, DestType: DestLink, Destination: id, Context: CtxKeepalive, Data: []byte{0xFF}}
	raw, _ = ka.Marshal()
	hexEq(t, "keepalive", raw, v.KeepalivePacket)

	_, closePlain := reencrypt(t, tok, "close packet", v.ClosePacket)
	hexEq(t, "close plaintext", closePlain, v.LinkID)
}
