package reticulum

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"
)

// ErrInterfaceDown is returned by Send while an interface is not connected.
var ErrInterfaceDown = errors.New("reticulum: interface is down")

// TCPClient is a TCP client interface to the reference's TCPServerInterface
// (as run by rnsd), with the HDLC framing the reference uses on TCP. It
// reconnects when the connection drops, waiting between attempts from
// MinBackoff, doubling up to MaxBackoff.
type TCPClient struct {
	Addr       string
	MinBackoff time.Duration // default 1s
	MaxBackoff time.Duration // default 30s
	Logger     *slog.Logger
	// Dial opens the connection; default net.Dialer.DialContext.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnConnect, when set, is called after each (re)connection; a Node uses
	// it to announce its destinations again.
	OnConnect func()

	mu     sync.Mutex
	conn   net.Conn
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// NewTCPClient returns a client interface to addr ("host:port").
func NewTCPClient(addr string) *TCPClient { return &TCPClient{Addr: addr} }

// Name returns "tcp:" and the address.
func (c *TCPClient) Name() string { return "tcp:" + c.Addr }

// Start connects in the background and keeps the connection up until Close.
func (c *TCPClient) Start(receive func(raw []byte)) {
	c.mu.Lock()
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.done = make(chan struct{})
	c.mu.Unlock()
	go c.run(receive)
}

// Connected reports whether the connection is up.
func (c *TCPClient) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn != nil
}

func (c *TCPClient) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

func (c *TCPClient) run(receive func(raw []byte)) {
	defer close(c.done)
	minB, maxB := c.MinBackoff, c.MaxBackoff
	if minB <= 0 {
		minB = time.Second
	}
	if maxB < minB {
		maxB = max(30*time.Second, minB)
	}
	dial := c.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 5 * time.Second}).DialContext
	}
	backoff := minB
	for c.ctx.Err() == nil {
		conn, err := dial(c.ctx, "tcp", c.Addr)
		if err != nil {
			c.logger().Debug("reticulum: tcp connect failed", "addr", c.Addr, "err", err, "retry_in", backoff)
			select {
			case <-c.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, maxB)
			continue
		}
		backoff = minB
		c.mu.Lock()
		c.conn = conn
		c.mu.Unlock()
		c.logger().Debug("reticulum: tcp connected", "addr", c.Addr)
		if c.OnConnect != nil {
			go c.OnConnect()
		}
		c.readLoop(conn, receive)
		c.mu.Lock()
		c.conn = nil
		c.mu.Unlock()
		conn.Close()
	}
}

func (c *TCPClient) readLoop(conn net.Conn, receive func(raw []byte)) {
	stop := context.AfterFunc(c.ctx, func() { conn.Close() })
	defer stop()
	var dec HDLCDecoder
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		for _, f := range dec.Write(buf[:n]) {
			receive(f)
		}
		if err != nil {
			return
		}
	}
}

// Send writes one HDLC-framed packet.
func (c *TCPClient) Send(raw []byte) error {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn == nil {
		return ErrInterfaceDown
	}
	conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := conn.Write(HDLCFrame(raw))
	return err
}

// Close drops the connection and stops reconnecting.
func (c *TCPClient) Close() error {
	c.mu.Lock()
	cancel, done := c.cancel, c.done
	c.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	<-done
	return nil
}
