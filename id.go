package herald

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"
)

// idGenerator makes UUIDv7-shaped ids from a clock: 48 bits of milliseconds,
// then a 74-bit counter seeded at random each millisecond. Ids from one
// generator sort in creation order even when the clock stands still.
type idGenerator struct {
	mu     sync.Mutex
	lastMS int64
	seq    uint64 // 62 bits used
	seqHi  uint16 // 12 bits
}

func (g *idGenerator) next(now time.Time) string {
	g.mu.Lock()
	ms := now.UnixMilli()
	if ms > g.lastMS {
		g.lastMS = ms
		var b [10]byte
		_, _ = rand.Read(b[:])
		g.seqHi = binary.BigEndian.Uint16(b[:2]) & 0x07ff // leave headroom for increments
		g.seq = binary.BigEndian.Uint64(b[2:]) & 0x1fffffffffffffff
	} else {
		ms = g.lastMS
		g.seq++
		if g.seq > 0x3fffffffffffffff {
			g.seq = 0
			g.seqHi++
		}
	}
	seq, seqHi := g.seq, g.seqHi
	g.mu.Unlock()

	var u [16]byte
	u[0] = byte(ms >> 40)
	u[1] = byte(ms >> 32)
	u[2] = byte(ms >> 24)
	u[3] = byte(ms >> 16)
	u[4] = byte(ms >> 8)
	u[5] = byte(ms)
	u[6] = 0x70 | byte(seqHi>>8)&0x0f
	u[7] = byte(seqHi)
	binary.BigEndian.PutUint64(u[8:], seq)
	u[8] = 0x80 | u[8]&0x3f

	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return string(s[:])
}
