package lxmf

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding"
	"hash"
	"io"
	"math/big"
	"runtime"
	"sync"

	"github.com/heraldmq/herald/reticulum"
	"github.com/vmihailenco/msgpack/v5"
	"golang.org/x/crypto/hkdf"
)

// Workblock expansion rounds of the reference: for a recipient's stamp, and
// for a propagation node's stamp.
const (
	WorkblockRounds   = 3000
	WorkblockRoundsPN = 1000
	// StampSize is the length of a stamp.
	StampSize = reticulum.FullHashLen
)

// Workblock expands material as the reference's stamp_workblock does: for
// each round n, 256 bytes of HKDF-SHA256 of material salted with
// SHA-256(material || msgpack(n)).
func Workblock(material []byte, rounds int) []byte {
	out := make([]byte, 0, rounds*256)
	for n := 0; n < rounds; n++ {
		packedN, _ := msgpack.Marshal(n)
		salt := reticulum.FullHash(material, packedN)
		block := make([]byte, 256)
		if _, err := io.ReadFull(hkdf.New(sha256.New, material, salt[:], nil), block); err != nil {
			panic(err) // 256 bytes is far below HKDF's limit
		}
		out = append(out, block...)
	}
	return out
}

// StampValid reports whether SHA-256(workblock || stamp), read as a
// big-endian number, is at most 2^(256-cost), as the reference checks.
func StampValid(stamp []byte, cost int, workblock []byte) bool {
	h := reticulum.FullHash(workblock, stamp)
	return stampMeets(h, cost)
}

func stampMeets(h [reticulum.FullHashLen]byte, cost int) bool {
	target := new(big.Int).Lsh(big.NewInt(1), uint(256-cost))
	return new(big.Int).SetBytes(h[:]).Cmp(target) <= 0
}

// StampValue is the number of leading zero bits of SHA-256(workblock ||
// stamp): the cost the stamp meets.
func StampValue(workblock, stamp []byte) int {
	h := reticulum.FullHash(workblock, stamp)
	v := 0
	for _, b := range h {
		if b == 0 {
			v += 8
			continue
		}
		for b&0x80 == 0 {
			v++
			b <<= 1
		}
		break
	}
	return v
}

// GenerateStamp searches random stamps until one meets cost for the
// workblock of material, using every CPU; it returns ctx's error if ctx ends
// first. Costs above 20 or so take a long time.
func GenerateStamp(ctx context.Context, material []byte, cost, rounds int) ([]byte, error) {
	wb := Workblock(material, rounds)
	base := sha256.New()
	base.Write(wb)
	state, err := base.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	found := make(chan []byte, 1)
	var wg sync.WaitGroup
	for w := 0; w < runtime.NumCPU(); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := sha256.New()
			stamp := make([]byte, StampSize)
			var sum [reticulum.FullHashLen]byte
			for i := 0; ctx.Err() == nil; i++ {
				if _, err := rand.Read(stamp); err != nil {
					return
				}
				resume(h, state)
				h.Write(stamp)
				h.Sum(sum[:0])
				if stampMeets(sum, cost) {
					select {
					case found <- append([]byte{}, stamp...):
					default:
					}
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case s := <-found:
		return s, nil
	default:
		return nil, ctx.Err()
	}
}

// resume restores a SHA-256 state saved with MarshalBinary.
func resume(h hash.Hash, state []byte) {
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		panic(err) // the state came from the same implementation
	}
}

// ValidateStamp checks a received message's stamp against the cost its
// recipient requires.
func (m *Message) ValidateStamp(cost int) bool {
	return m.Stamp != nil && StampValid(m.Stamp, cost, Workblock(m.Hash[:], WorkblockRounds))
}
