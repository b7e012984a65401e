// Package proctest holds what the tests' private servers (redistest,
// mqtttest) share: a free loopback port, and waiting for a started server
// to answer.
package proctest

import (
	"fmt"
	"net"
	"time"
)

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitReady calls probe every 20 ms until it succeeds, the server exits
// (exited is closed) or timeout passes, and returns nil only in the first
// case; the error says which, with probe's last error.
func WaitReady(probe func() error, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := probe()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before it answered: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer after %v: %v", timeout, err)
		}
	}
}
