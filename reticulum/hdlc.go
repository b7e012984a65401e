package reticulum

import "bytes"

// HDLC-like framing as the reference's TCP interfaces use it: each packet is
// escaped and enclosed in flag bytes.
const (
	hdlcFlag    = 0x7E
	hdlcEsc     = 0x7D
	hdlcEscMask = 0x20
)

// HDLCFrame escapes data and encloses it in flag bytes.
func HDLCFrame(data []byte) []byte {
	out := make([]byte, 0, len(data)+8)
	out = append(out, hdlcFlag)
	for _, b := range data {
		if b == hdlcFlag || b == hdlcEsc {
			out = append(out, hdlcEsc, b^hdlcEscMask)
		} else {
			out = append(out, b)
		}
	}
	return append(out, hdlcFlag)
}

// HDLCDecoder splits a byte stream into frames.
type HDLCDecoder struct {
	buf []byte
}

// Write adds stream bytes and returns the complete frames they finish,
// unescaped. Frames shorter than a minimal packet header are dropped, as the
// reference drops them.
func (d *HDLCDecoder) Write(p []byte) [][]byte {
	d.buf = append(d.buf, p...)
	var frames [][]byte
	for {
		start := bytes.IndexByte(d.buf, hdlcFlag)
		if start < 0 {
			d.buf = d.buf[:0]
			return frames
		}
		end := bytes.IndexByte(d.buf[start+1:], hdlcFlag)
		if end < 0 {
			d.buf = append(d.buf[:0], d.buf[start:]...)
			return frames
		}
		end += start + 1
		frame := hdlcUnescape(d.buf[start+1 : end])
		d.buf = d.buf[end:]
		if len(frame) >= headerMinSize {
			frames = append(frames, frame)
		}
	}
}

func hdlcUnescape(in []byte) []byte {
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		if in[i] == hdlcEsc && i+1 < len(in) {
			i++
			out = append(out, in[i]^hdlcEscMask)
			continue
		}
		out = append(out, in[i])
	}
	return out
}
