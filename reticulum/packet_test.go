package reticulum

import (
	"bytes"
	"testing"
)

type packetKAT struct {
	Packets []struct {
		Name          string `json:"name"`
		Raw           string `json:"raw"`
		Flags         byte   `json:"flags"`
		Hops          uint8  `json:"hops"`
		Destination   string `json:"destination"`
		Context       uint8  `json:"context"`
		HeaderType    uint8  `json:"header_type"`
		TransportType uint8  `json:"transport_type"`
		DestType      uint8  `json:"dest_type"`
		PacketType    uint8  `json:"packet_type"`
		ContextFlag   uint8  `json:"context_flag"`
		TransportID   string `json:"transport_id"`
		Data          string `json:"data"`
		Hash          string `json:"hash"`
		TruncatedHash string `json:"truncated_hash"`
		Ephemeral     string `json:"ephemeral_private_key"`
		IV            string `json:"iv"`
		Plaintext     string `json:"plaintext"`
		Recipient     string `json:"recipient_private_key"`
		Requested     string `json:"requested"`
		Tag           string `json:"tag"`
	} `json:"packets"`
	Proofs []struct {
		Kind         string `json:"kind"`
		ProvedPacket string `json:"proved_packet"`
		Raw          string `json:"raw"`
		Prover       string `json:"prover_public_key"`
	} `json:"proofs"`
}

func TestPacketKnownAnswers(t *testing.T) {
	var k packetKAT
	loadKAT(t, "packets.json", &k)
	seen := 0
	for _, v := range k.Packets {
		if v.Name == "path_request" {
			continue
		}
		seen++
		p := mustParse(t, v.Raw)
		if p.Flags() != v.Flags || p.Hops != v.Hops || p.Context != v.Context || p.HeaderType != v.HeaderType ||
			p.TransportType != v.TransportType || p.DestType != v.DestType || p.PacketType != v.PacketType || p.ContextFlag != (v.ContextFlag == 1) {
			t.Errorf("%s: parsed fields %+v", v.Name, p)
		}
		hexEq(t, v.Name+" destination", p.Destination[:], v.Destination)
		hexEq(t, v.Name+" data", p.Data, v.Data)
		if v.TransportID != "" {
			hexEq(t, v.Name+" transport id", p.TransportID[:], v.TransportID)
		}
		h := p.Hash()
		hexEq(t, v.Name+" hash", h[:], v.Hash)
		hexEq(t, v.Name+" truncated hash", p.TruncatedHash().Bytes(), v.TruncatedHash)
		raw, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		hexEq(t, v.Name+" marshal", raw, v.Raw)
		if v.Ephemeral != "" {
			rcpt := mustIdentity(t, v.Recipient)
			pub, _ := IdentityFromPublicKey(rcpt.PublicKey())
			ct, err := pub.encryptWith(mustX25519(t, v.Ephemeral), unhex(t, v.IV), unhex(t, v.Plaintext), nil)
			if err != nil {
				t.Fatal(err)
			}
			built := &Packet{DestType: DestSingle, PacketType: PacketData, Destination: DestinationHash(pub, "lxmf", "delivery"), Data: ct}
			raw, err := built.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			hexEq(t, v.Name+" built", raw, v.Raw)
		}
	}
	if seen != 2 {
		t.Fatalf("want 2 packet vectors, got %d", seen)
	}
}

func TestPathRequestKnownAnswer(t *testing.T) {
	var k packetKAT
	loadKAT(t, "packets.json", &k)
	for _, v := range k.Packets {
		if v.Name != "path_request" {
			continue
		}
		want, _ := HashFromBytes(unhex(t, v.Requested))
		var tag Hash
		copy(tag[:], unhex(t, v.Tag))
		raw, err := pathRequestPacket(want, tag).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		hexEq(t, "path request", raw, v.Raw)
		got, gotTag, ok := ParsePathRequest(mustParse(t, v.Raw))
		if !ok || got != want || gotTag != tag {
			t.Errorf("parsed path request %v %v %v", got, gotTag, ok)
		}
		return
	}
	t.Fatal("no path request vector")
}

func TestProofKnownAnswers(t *testing.T) {
	var k packetKAT
	loadKAT(t, "packets.json", &k)
	if len(k.Proofs) != 2 {
		t.Fatalf("want 2 proofs, got %d", len(k.Proofs))
	}
	var rcpt *Identity
	for _, v := range k.Packets {
		if v.Recipient != "" {
			rcpt = mustIdentity(t, v.Recipient)
		}
	}
	for _, v := range k.Proofs {
		proved := mustParse(t, v.ProvedPacket)
		pp, err := proofPacket(rcpt.Sign, proved, v.Kind == "explicit")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := pp.Marshal()
		hexEq(t, v.Kind+" proof", raw, v.Raw)
		ref := mustParse(t, v.Raw)
		prover, _ := IdentityFromPublicKey(unhex(t, v.Prover))
		if ref.Destination != proved.TruncatedHash() {
			t.Error("proof not addressed to the proved packet's truncated hash")
		}
		if !validProof(ref.Data, proved.Hash(), prover.Verify) {
			t.Errorf("%s proof from the reference does not validate", v.Kind)
		}
		other := proved.Hash()
		other[0] ^= 1
		if validProof(ref.Data, other, prover.Verify) {
			t.Errorf("%s proof validates another packet", v.Kind)
		}
	}
}

func TestHDLCRoundTrip(t *testing.T) {
	pkts := [][]byte{
		bytes.Repeat([]byte{0x7E, 0x7D, 0x20, 0x5D}, 10),
		append(make([]byte, 19), 0x7E),
		make([]byte, 3), // below the minimal header: dropped
		bytes.Repeat([]byte{1}, 400),
	}
	var stream []byte
	for _, p := range pkts {
		stream = append(stream, HDLCFrame(p)...)
	}
	if bytes.Count(HDLCFrame(pkts[0]), []byte{0x7E}) != 2 {
		t.Fatal("flag byte not escaped")
	}
	var d HDLCDecoder
	var got [][]byte
	for i := 0; i < len(stream); i += 7 { // feed in odd-sized chunks
		end := min(i+7, len(stream))
		got = append(got, d.Write(stream[i:end])...)
	}
	want := [][]byte{pkts[0], pkts[1], pkts[3]}
	if len(got) != len(want) {
		t.Fatalf("got %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("frame %d differs", i)
		}
	}
}
