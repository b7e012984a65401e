package reticulum

import (
	"bytes"
	"net"
	"testing"
	"time"
)

func TestTCPClientFramesAndReconnects(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conns := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	got := make(chan []byte, 4)
	connects := make(chan struct{}, 4)
	c := NewTCPClient(ln.Addr().String())
	c.MinBackoff, c.MaxBackoff = 10*time.Millisecond, 40*time.Millisecond
	c.OnConnect = func() { connects <- struct{}{} }
	c.Start(func(raw []byte) { got <- raw })
	defer c.Close()

	server := <-conns
	<-connects
	pkt := append(bytes.Repeat([]byte{0x7E}, 10), bytes.Repeat([]byte{0x7D}, 20)...)
	server.Write(HDLCFrame(pkt))
	if r := <-got; !bytes.Equal(r, pkt) {
		t.Fatal("received frame differs")
	}
	if err := c.Send(pkt); err != nil {
		t.Fatal(err)
	}
	var dec HDLCDecoder
	buf := make([]byte, 256)
	server.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _ := server.Read(buf)
	if fs := dec.Write(buf[:n]); len(fs) != 1 || !bytes.Equal(fs[0], pkt) {
		t.Fatal("sent frame differs")
	}

	// The server drops the connection: the client reconnects.
	server.Close()
	select {
	case server = <-conns:
	case <-time.After(5 * time.Second):
		t.Fatal("no reconnection")
	}
	<-connects
	eventually(t, "connected", c.Connected)
	server.Write(HDLCFrame(pkt))
	if r := <-got; !bytes.Equal(r, pkt) {
		t.Fatal("frame after reconnect differs")
	}

	// While the server is gone, Send fails with ErrInterfaceDown.
	ln.Close()
	server.Close()
	eventually(t, "disconnected", func() bool { return !c.Connected() })
	if err := c.Send(pkt); err != ErrInterfaceDown {
		t.Fatalf("send while down: %v", err)
	}
}
