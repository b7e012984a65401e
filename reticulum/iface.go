package reticulum

// Interface is a link layer a [Node] sends and receives packets on. The node
// calls Start once with the function that takes each received packet (one
// unframed packet per call), Send for each outbound packet, and Close when it
// stops. [TCPClient] is the interface to an rnsd TCPServerInterface; a
// simulator can provide its own.
type Interface interface {
	// Name identifies the interface in the path table and in logs.
	Name() string
	// Start begins delivering received packets to receive.
	Start(receive func(raw []byte))
	// Send transmits one packet. It fails when the interface is down.
	Send(raw []byte) error
	// Close stops the interface.
	Close() error
}
