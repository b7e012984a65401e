package lxmf

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/heraldmq/herald/reticulum"
	"github.com/vmihailenco/msgpack/v5"
)

type lxmfKAT struct {
	Messages []struct {
		Name           string  `json:"name"`
		Source         string  `json:"source_private_key"`
		Destination    string  `json:"destination_private_key"`
		Timestamp      float64 `json:"timestamp"`
		Title          string  `json:"title"`
		Content        string  `json:"content"`
		Packed         string  `json:"packed"`
		Hash           string  `json:"hash"`
		Signature      string  `json:"signature"`
		Stamp          string  `json:"stamp"`
		StampCost      int     `json:"stamp_cost"`
		WorkblockSHA   string  `json:"workblock_sha256"`
		WorkblockLen   int     `json:"workblock_len"`
		StampValue     int     `json:"stamp_value"`
		Representation int     `json:"representation"`
	} `json:"messages"`
	Propagation struct {
		Packed      string  `json:"packed"`
		Ephemeral   string  `json:"ephemeral_private_key"`
		IV          string  `json:"iv"`
		Destination string  `json:"destination_private_key"`
		LXMFData    string  `json:"lxmf_data"`
		TransientID string  `json:"transient_id"`
		Stamp       string  `json:"stamp"`
		StampCost   int     `json:"stamp_cost"`
		StampValue  int     `json:"stamp_value"`
		Container   string  `json:"container_example"`
		ContainerT  float64 `json:"container_time"`
	} `json:"propagation"`
	AppData struct {
		Delivery    string `json:"delivery"`
		DisplayName string `json:"delivery_display_name"`
		StampCost   int    `json:"delivery_stamp_cost"`
		Legacy      string `json:"delivery_legacy"`
		NoCost      string `json:"delivery_no_cost"`
		Propagation string `json:"propagation"`
		PNStampCost int    `json:"propagation_stamp_cost"`
		PNStampFlex int    `json:"propagation_stamp_flex"`
		PNName      string `json:"propagation_name"`
	} `json:"app_data"`
}

func load(t *testing.T) lxmfKAT {
	t.Helper()
	b, err := os.ReadFile("../testdata/lxmf.json")
	if err != nil {
		t.Fatal(err)
	}
	var k lxmfKAT
	if err := json.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	return k
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func identity(t *testing.T, s string) *reticulum.Identity {
	t.Helper()
	id, err := reticulum.IdentityFromPrivateKey(unhex(t, s))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestMessageKnownAnswers(t *testing.T) {
	k := load(t)
	if len(k.Messages) != 4 {
		t.Fatalf("want 4 messages, got %d", len(k.Messages))
	}
	for _, v := range k.Messages {
		src, dst := identity(t, v.Source), identity(t, v.Destination)
		lookup := func(h reticulum.Hash) *reticulum.Identity {
			if h == reticulum.DestinationHash(src, "lxmf", "delivery") {
				pub, _ := reticulum.IdentityFromPublicKey(src.PublicKey())
				return pub
			}
			return nil
		}
		// Parse the reference's bytes.
		m, err := Unpack(unhex(t, v.Packed), lookup)
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if !m.SignatureValid || hex.EncodeToString(m.Hash[:]) != v.Hash || string(m.Title) != v.Title || string(m.Content) != v.Content || m.Timestamp != v.Timestamp {
			t.Errorf("%s: unpacked %+v", v.Name, m)
		}
		if hex.EncodeToString(m.Stamp) != v.Stamp {
			t.Errorf("%s: stamp %x", v.Name, m.Stamp)
		}
		// Produce the same bytes.
		mine := &Message{Destination: reticulum.DestinationHash(dst, "lxmf", "delivery"), Source: reticulum.DestinationHash(src, "lxmf", "delivery"),
			Timestamp: v.Timestamp, Title: []byte(v.Title), Content: []byte(v.Content), Fields: m.Fields, Stamp: m.Stamp}
		if err := mine.Pack(src); err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(mine.Packed) != v.Packed || hex.EncodeToString(mine.Signature) != v.Signature {
			t.Errorf("%s: packed\n got %x\nwant %s", v.Name, mine.Packed, v.Packed)
		}
		if big := mine.ContentSize() > LinkPacketMaxContent; big != (v.Representation == 2) {
			t.Errorf("%s: resource %v, reference representation %d", v.Name, big, v.Representation)
		}
		// A tampered message fails verification; an unknown source is reported.
		bad := unhex(t, v.Packed)
		bad[2*16+64+3] ^= 1 // inside the signed payload
		if mb, err := Unpack(bad, lookup); err == nil && mb.SignatureValid {
			t.Errorf("%s: tampered message verified", v.Name)
		}
		if mu, _ := Unpack(unhex(t, v.Packed), func(reticulum.Hash) *reticulum.Identity { return nil }); mu.SignatureValid || mu.UnverifiedReason != SourceUnknown {
			t.Errorf("%s: unknown source not reported", v.Name)
		}
		if v.StampCost > 0 {
			wb := Workblock(m.Hash[:], WorkblockRounds)
			sum := reticulum.FullHash(wb)
			if len(wb) != v.WorkblockLen || hex.EncodeToString(sum[:]) != v.WorkblockSHA {
				t.Errorf("workblock differs")
			}
			if !m.ValidateStamp(v.StampCost) || StampValue(wb, m.Stamp) != v.StampValue {
				t.Errorf("reference stamp not valid at cost %d", v.StampCost)
			}
			if StampValid(m.Stamp, v.StampValue+1, wb) {
				t.Errorf("stamp valid above its value")
			}
			s, err := GenerateStamp(context.Background(), m.Hash[:], v.StampCost, WorkblockRounds)
			if err != nil || !StampValid(s, v.StampCost, wb) {
				t.Errorf("generated stamp invalid: %v", err)
			}
		}
	}
}

func TestPropagationKnownAnswers(t *testing.T) {
	v := load(t).Propagation
	dst := identity(t, v.Destination)
	packed := unhex(t, v.Packed)
	dh, _ := reticulum.HashFromBytes(packed[:16])
	// The recipient decrypts the reference's propagation data.
	lx := unhex(t, v.LXMFData)
	pt, err := dst.Decrypt(lx[16:])
	if err != nil || !bytes.Equal(pt, packed[16:]) {
		t.Fatalf("decrypt: %v", err)
	}
	pd := newPropagationData(dh, lx[16:])
	if hex.EncodeToString(pd.TransientID[:]) != v.TransientID {
		t.Error("transient id differs")
	}
	id, value, ok := ValidatePropagationStamp(append(lx, unhex(t, v.Stamp)...), v.StampCost)
	if !ok || value != v.StampValue || id != pd.TransientID {
		t.Errorf("reference propagation stamp: ok %v value %d", ok, value)
	}
	if _, _, ok := ValidatePropagationStamp(append(lx, make([]byte, 32)...), v.StampCost); ok {
		t.Error("zero stamp accepted")
	}
	c, err := pd.Container(v.ContainerT, unhex(t, v.Stamp))
	if err != nil || hex.EncodeToString(c) != v.Container {
		t.Errorf("container\n got %x\nwant %s", c, v.Container)
	}
	s, err := GenerateStamp(context.Background(), pd.TransientID[:], 4, WorkblockRoundsPN)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := ValidatePropagationStamp(append(lx, s...), 4); !ok {
		t.Error("generated propagation stamp invalid")
	}
}

func TestAppDataKnownAnswers(t *testing.T) {
	v := load(t).AppData
	b, err := DeliveryAppData(v.DisplayName, v.StampCost)
	if err != nil || hex.EncodeToString(b) != v.Delivery {
		t.Errorf("delivery app data %x", b)
	}
	if b, _ := DeliveryAppData("NoCost", 0); hex.EncodeToString(b) != v.NoCost {
		t.Errorf("no-cost app data %x", b)
	}
	if DisplayName(unhex(t, v.Delivery)) != v.DisplayName || StampCost(unhex(t, v.Delivery)) != v.StampCost {
		t.Error("delivery app data parse")
	}
	if DisplayName(unhex(t, v.Legacy)) != "Old Name" || StampCost(unhex(t, v.Legacy)) != 0 || StampCost(unhex(t, v.NoCost)) != 0 {
		t.Error("legacy / no-cost app data parse")
	}
	c, ok := ParsePropagationAppData(unhex(t, v.Propagation))
	if !ok || c.StampCost != v.PNStampCost || c.StampFlexibility != v.PNStampFlex || c.Name != v.PNName || !c.Enabled {
		t.Errorf("propagation app data %+v %v", c, ok)
	}
	if _, ok := ParsePropagationAppData(unhex(t, v.Delivery)); ok {
		t.Error("delivery app data taken for propagation node data")
	}
	var x []any
	if msgpack.Unmarshal(unhex(t, v.Propagation), &x); len(x) != 7 {
		t.Error("propagation vector malformed")
	}
}
