package reticulum

// PathRequestDestination is where path requests go: a PLAIN destination
// every node listens on.
var PathRequestDestination = DestinationHash(nil, "rnstransport", "path", "request")

// pathRequestPacket builds a non-transport node's path request: the
// requested destination hash followed by a random tag that lets nodes drop
// duplicates.
func pathRequestPacket(dest, tag Hash) *Packet {
	return &Packet{
		PacketType:  PacketData,
		DestType:    DestPlain,
		Destination: PathRequestDestination,
		Data:        append(dest.Bytes(), tag[:]...),
	}
}

// ParsePathRequest reads a path request from a non-transport node (hash and
// tag) or a transport node (hash, its transport id, tag).
func ParsePathRequest(p *Packet) (dest, tag Hash, ok bool) {
	if p.Destination != PathRequestDestination || p.PacketType != PacketData {
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
