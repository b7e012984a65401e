package main

import (
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/heraldmq/herald/config"
)

// limitListener accepts at most max connections open at once: at the cap,
// Accept waits for one to close, and further clients wait in the kernel's
// backlog. Reaching the cap is logged once (until the connections fall
// below it again) and counted with problem. It is x/net's netutil
// LimitListener plus that log line and count, which netutil's cannot give.
type limitListener struct {
	net.Listener
	slots   chan struct{}
	log     *slog.Logger
	problem func(kind string)
	mu      sync.Mutex
	full    bool // the cap was reached and not yet logged as left
	done    chan struct{}
	once    sync.Once
}

func newLimitListener(ln net.Listener, max int, log *slog.Logger, problem func(string)) *limitListener {
	l := &limitListener{Listener: ln, slots: make(chan struct{}, max), log: log, problem: problem, done: make(chan struct{})}
	go l.releaseMemory()
	return l
}

// Memory of connections gone is handed back to the system once their
// number fell by releaseDrop since its peak and has stayed down for a
// releaseEvery: the runtime would otherwise keep it until its heap grew
// again, up to minutes later.
const (
	releaseDrop  = 256
	releaseEvery = 5 * time.Second
)

// releaseMemory hands memory back (debug.FreeOSMemory: a collection and a
// scavenge) after many connections closed, until the listener closes.
func (l *limitListener) releaseMemory() {
	tick := time.NewTicker(releaseEvery)
	defer tick.Stop()
	peak, last := 0, 0
	for {
		select {
		case <-l.done:
			return
		case <-tick.C:
		}
		open := len(l.slots)
		if peak-open >= releaseDrop && last-open < releaseDrop/4 { // fell, and settled since the last tick
			debug.FreeOSMemory()
			peak = open
		}
		peak, last = max(peak, open), open
	}
}

// Accept waits for a free slot, then for a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		l.reached()
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: l.release}, nil
}

// reached logs and counts the cap being hit, once until it is left.
func (l *limitListener) reached() {
	l.mu.Lock()
	first := !l.full
	l.full = true
	l.mu.Unlock()
	if first {
		l.log.Warn("connection limit reached: new connections wait until one closes (http.max_connections)", "max_connections", cap(l.slots))
		l.problem("connection_limit")
	}
}

// release frees a connection's slot.
func (l *limitListener) release() {
	<-l.slots
	l.mu.Lock()
	left := l.full && len(l.slots) < cap(l.slots)*9/10
	if left {
		l.full = false
	}
	l.mu.Unlock()
	if left {
		l.log.Info("connections below the limit again", "max_connections", cap(l.slots))
	}
}

// Close closes the listener and ends an Accept waiting for a slot.
func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn frees its slot when first closed.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// newHTTPServer returns the API's server with the limits of lim: a
// client that sends its headers or its body too slowly, or that keeps an
// idle connection open too long, is cut off.
func newHTTPServer(h http.Handler, lim config.HTTP, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: lim.ReadHeaderTimeout.D(),
		ReadTimeout:       lim.ReadTimeout.D(),
		WriteTimeout:      lim.WriteTimeout.D(),
		IdleTimeout:       lim.IdleTimeout.D(),
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
