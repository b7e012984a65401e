package reticulum

import "sync"

// PipeEnd is one end of an in-memory link between two interfaces, for
// simulators and tests: what one end sends, the other receives, in order.
type PipeEnd struct {
	name string
	peer *PipeEnd

	mu     sync.Mutex
	down   bool
	closed bool
	q      chan []byte
}

// NewPipe returns two connected interfaces named a and b.
func NewPipe(a, b string) (*PipeEnd, *PipeEnd) {
	x := &PipeEnd{name: a, q: make(chan []byte, 1024)}
	y := &PipeEnd{name: b, q: make(chan []byte, 1024)}
	x.peer, y.peer = y, x
	return x, y
}

// Name returns the end's name.
func (p *PipeEnd) Name() string { return p.name }

// Start delivers what the other end sends to receive, from one goroutine.
func (p *PipeEnd) Start(receive func(raw []byte)) {
	go func() {
		for raw := range p.q {
			receive(raw)
		}
	}()
}

// SetDown simulates an outage: while down, Send fails with
// ErrInterfaceDown and nothing is delivered to this end.
func (p *PipeEnd) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

// Send hands a copy of raw to the other end.
func (p *PipeEnd) Send(raw []byte) error {
	p.mu.Lock()
	down := p.down || p.closed
	p.mu.Unlock()
	if down {
		return ErrInterfaceDown
	}
	p.peer.deliver(append([]byte{}, raw...))
	return nil
}

func (p *PipeEnd) deliver(raw []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && !p.down {
		p.q <- raw
	}
}

// Close stops the end.
func (p *PipeEnd) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.q)
	}
	return nil
}
