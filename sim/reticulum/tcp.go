package reticulum

import (
	"errors"
	"net"
	"sync"
	"time"

	rns "github.com/heraldmq/herald/reticulum"
)

// serveTCP accepts clients on ln until it is closed, as the reference's
// TCPServerInterface does: each connection is a port of the transport
// node, its packets HDLC-framed.
func (s *Sim) serveTCP(ln net.Listener) {
	defer s.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			conn.Close()
			return
		}
		s.conns[conn] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serveConn(conn)
	}
}

// serveConn runs one client's connection until it closes.
func (s *Sim) serveConn(conn net.Conn) {
	defer s.wg.Done()
	var wmu sync.Mutex
	p := &port{name: "tcp:" + conn.RemoteAddr().String(), send: func(raw []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, err := conn.Write(rns.HDLCFrame(raw))
		return err
	}}
	s.t.attach(p)
	defer func() {
		s.t.detach(p)
		conn.Close()
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
	}()
	var dec rns.HDLCDecoder
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		for _, f := range dec.Write(buf[:n]) {
			s.t.inbound(f, p)
		}
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Debug("reticulum sim: client gone", "port", p.name, "err", err)
			}
			return
		}
	}
}
