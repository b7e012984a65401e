package reticulum

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

type identityKAT struct {
	Identities []struct {
		PrivateKey  string `json:"private_key"`
		PublicKey   string `json:"public_key"`
		Hash        string `json:"hash"`
		SignMessage string `json:"sign_message"`
		Signature   string `json:"signature"`
	} `json:"identities"`
	Destinations []struct {
		IdentityHash string   `json:"identity_hash"`
		App          string   `json:"app"`
		Aspects      []string `json:"aspects"`
		NameHash     string   `json:"name_hash"`
		Hash         string   `json:"hash"`
	} `json:"destinations"`
	Plain []struct {
		App     string   `json:"app"`
		Aspects []string `json:"aspects"`
		Hash    string   `json:"hash"`
	} `json:"plain_destinations"`
	Encryption []struct {
		Recipient  string `json:"recipient_private_key"`
		Ephemeral  string `json:"ephemeral_private_key"`
		IV         string `json:"iv"`
		Plaintext  string `json:"plaintext"`
		RatchetPub string `json:"ratchet_public"`
		RatchetPrv string `json:"ratchet_private"`
		Ciphertext string `json:"ciphertext"`
	} `json:"encryption"`
}

func TestIdentityKnownAnswers(t *testing.T) {
	var k identityKAT
	loadKAT(t, "identity.json", &k)
	byHash := map[string]*Identity{}
	for _, v := range k.Identities {
		id := mustIdentity(t, v.PrivateKey)
		hexEq(t, "public key", id.PublicKey(), v.PublicKey)
		hexEq(t, "hash", id.Hash().Bytes(), v.Hash)
		hexEq(t, "private key round trip", id.PrivateKey(), v.PrivateKey)
		sig, err := id.Sign(unhex(t, v.SignMessage))
		if err != nil {
			t.Fatal(err)
		}
		hexEq(t, "signature", sig, v.Signature)
		pub, err := IdentityFromPublicKey(unhex(t, v.PublicKey))
		if err != nil {
			t.Fatal(err)
		}
		if !pub.Verify(unhex(t, v.Signature), unhex(t, v.SignMessage)) {
			t.Error("reference signature does not verify")
		}
		if pub.Verify(unhex(t, v.Signature), []byte("other")) {
			t.Error("signature verifies another message")
		}
		byHash[v.Hash] = id
	}
	for _, d := range k.Destinations {
		id := byHash[d.IdentityHash]
		n := NameHash(d.App, d.Aspects...)
		hexEq(t, "name hash", n[:], d.NameHash)
		hexEq(t, "destination hash "+FullName(d.App, d.Aspects...), DestinationHash(id, d.App, d.Aspects...).Bytes(), d.Hash)
	}
	for _, d := range k.Plain {
		hexEq(t, "plain destination hash", DestinationHash(nil, d.App, d.Aspects...).Bytes(), d.Hash)
	}
}

func TestEncryptionKnownAnswers(t *testing.T) {
	var k identityKAT
	loadKAT(t, "identity.json", &k)
	if len(k.Encryption) != 2 {
		t.Fatalf("want 2 encryption vectors, got %d", len(k.Encryption))
	}
	for _, v := range k.Encryption {
		rcpt := mustIdentity(t, v.Recipient)
		pub, _ := IdentityFromPublicKey(rcpt.PublicKey())
		ct, err := pub.encryptWith(mustX25519(t, v.Ephemeral), unhex(t, v.IV), unhex(t, v.Plaintext), unhex(t, v.RatchetPub))
		if err != nil {
			t.Fatal(err)
		}
		hexEq(t, "ciphertext", ct, v.Ciphertext)
		var ratchets [][]byte
		if v.RatchetPrv != "" {
			ratchets = append(ratchets, unhex(t, v.RatchetPrv))
			if _, err := rcpt.Decrypt(unhex(t, v.Ciphertext)); err == nil {
				t.Error("ratchet ciphertext decrypted without the ratchet")
			}
		}
		pt, err := rcpt.Decrypt(unhex(t, v.Ciphertext), ratchets...)
		if err != nil {
			t.Fatal(err)
		}
		hexEq(t, "plaintext", pt, v.Plaintext)
		bad := unhex(t, v.Ciphertext)
		bad[40] ^= 1
		if _, err := rcpt.Decrypt(bad, ratchets...); err == nil {
			t.Error("tampered ciphertext decrypted")
		}
	}
}

func TestLoadOrCreateIdentity(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "identity")
	a, err := LoadOrCreateIdentity(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	if !bytes.Equal(b, a.PrivateKey()) || len(b) != PrivateKeyLen {
		t.Error("file does not hold the 64-byte private key")
	}
	again, err := LoadOrCreateIdentity(path)
	if err != nil {
		t.Fatal(err)
	}
	if again.Hash() != a.Hash() {
		t.Error("second load gave another identity")
	}
}
