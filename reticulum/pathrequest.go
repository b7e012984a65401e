package reticulum

// The path request destination: a PLAIN destination every node listens on.
var pathRequestDestination = DestinationHash(nil, "rnstransport", "path", "request")

// pathRequestPacket builds a non-transport node's path request: the
// requested destination hash followed by a random tag that lets nodes drop
// duplicates.
func pathRequestPacket(dest, tag Hash) *Packet {
	return &Packet{
		PacketType:  PacketData,
		DestType:    DestPlain,
		Destination: pathRequestDestination,
		Data:        append(dest.Bytes(), tag[:]...),
	}
}

// parsePathRequest reads a path request from a non-transport node (hash and
// tag) or a transport node (hash, its transport id, tag).
func parsePathRequest(p *Packet) (dest, tag Hash, ok bool) {
	if p.Destination != pathRequestDestination || p.PacketType != PacketData {
		return dest, tag, false
	}
	switch len(p.Data) {
	case 2 * TruncatedHashLen:
		copy(dest[:], p.Data)
		copy(tag[:], p.Data[TruncatedHashLen:])
	case 3 * TruncatedHashLen:
		copy(dest[:], p.Data)
		copy(tag[:], p.Data[2*TruncatedHashLen:])
	default:
		return dest, tag, false
	}
	return dest, tag, true
}
