// Package proctest holds what the tests' private servers (redistest,
// mqtttest) share: a free loopback port, starting a server with its output
// in a log file, and waiting for it to answer.
package proctest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"time"
)

// Start starts bin with args, its standard output and error appended to
// the file at logPath, and returns the command and a channel closed once
// it has exited (and been waited for).
func Start(bin string, args []string, logPath string) (*exec.Cmd, chan struct{}, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	defer log.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	end := make(chan struct{})
	go func() {
		cmd.Wait()
		close(end)
	}()
	return cmd, end, nil
}

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
