package reticulum

import (
	"bytes"
	"testing"
	"time"
)

type announceKAT struct {
	Announces []struct {
		Name         string   `json:"name"`
		PrivateKey   string   `json:"private_key"`
		App          string   `json:"app"`
		Aspects      []string `json:"aspects"`
		RandomHash   string   `json:"random_hash"`
		RatchetPub   string   `json:"ratchet_public"`
		AppData      string   `json:"app_data"`
		Raw          string   `json:"raw"`
		Destination  string   `json:"destination"`
		Timestamp    int64    `json:"timestamp"`
		PathResponse bool     `json:"path_response"`
	} `json:"announces"`
}

func TestAnnounceKnownAnswers(t *testing.T) {
	var k announceKAT
	loadKAT(t, "announce.json", &k)
	if len(k.Announces) != 3 {
		t.Fatalf("want 3 announces, got %d", len(k.Announces))
	}
	for _, v := range k.Announces {
		id := mustIdentity(t, v.PrivateKey)
		var rnd [10]byte
		copy(rnd[:], unhex(t, v.RandomHash))
		dest := DestinationHash(id, v.App, v.Aspects...)
		p, err := buildAnnounce(id, dest, NameHash(v.App, v.Aspects...), rnd, unhex(t, v.RatchetPub), unhex(t, v.AppData), v.PathResponse)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := p.Marshal()
		hexEq(t, v.Name+" built", raw, v.Raw)

		a, err := ParseAnnounce(mustParse(t, v.Raw))
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		hexEq(t, v.Name+" destination", a.Destination[:], v.Destination)
		hexEq(t, v.Name+" ratchet", a.Ratchet, v.RatchetPub)
		hexEq(t, v.Name+" app data", a.AppData, v.AppData)
		if a.Identity.Hash() != id.Hash() || a.PathResponse != v.PathResponse {
			t.Errorf("%s: identity or context wrong", v.Name)
		}
		if !a.Timestamp().Equal(time.Unix(v.Timestamp, 0)) {
			t.Errorf("%s: timestamp %v", v.Name, a.Timestamp())
		}
		// Any change to the signed data invalidates the announce.
		for _, off := range []int{19 + 70, len(raw) - 1} {
			bad := bytes.Clone(unhex(t, v.Raw))
			bad[off] ^= 1
			if _, err := ParseAnnounce(mustParse(t, hexString(bad))); err == nil {
				t.Errorf("%s: tampered byte %d accepted", v.Name, off)
			}
		}
	}
}
