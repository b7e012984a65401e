// Package mqtttest runs a private mosquitto MQTT broker for a test: on a free
// loopback port, with a config file in the test's temporary directory,
// stopped when the test ends. It never touches a broker it did not start
// (in particular not a shared one on 127.0.0.1:1883).
package mqtttest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldmq/herald/internal/proctest"
)

// startTimeout bounds how long a broker may take to answer a CONNECT.
const startTimeout = 15 * time.Second

// debianPath is where Debian's mosquitto package installs the broker; it is
// often not on a non-root user's PATH.
const debianPath = "/usr/sbin/mosquitto"

// Server is a mosquitto broker started by Start.
type Server struct {
	bin  string
	dir  string
	port int

	mu  sync.Mutex
	cmd *exec.Cmd     // nil while stopped
	end chan struct{} // closed when cmd has exited
}

// Binary returns the path of the mosquitto binary: the one on PATH, else
// Debian's /usr/sbin/mosquitto. It returns "" when there is neither.
func Binary() string {
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p
	}
	if fi, err := os.Stat(debianPath); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return debianPath
	}
	return ""
}

// Start starts a mosquitto broker for tb and stops it when tb ends. It skips
// tb when mosquitto is not installed.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := Binary()
	if bin == "" {
		tb.Skip("mosquitto not found on PATH nor at " + debianPath + ": install Debian's mosquitto package (apt-get install mosquitto) to run the MQTT tests")
	}
	s := &Server{bin: bin, dir: tb.TempDir()}
	tb.Cleanup(s.kill)
	var err error
	for attempt := 0; ; attempt++ {
		s.port, err = proctest.FreePort()
		if err != nil {
			tb.Fatalf("mqtttest: %v", err)
		}
		err = s.start()
		if err == nil {
			return s
		}
		if attempt == 4 { // the port was taken meanwhile, four times over
			tb.Fatalf("mqtttest: %v", err)
		}
	}
}

// Addr returns the broker's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL returns the broker's address as a tcp:// URL, the form MQTT clients
// (paho, ChirpStack) take.
func (s *Server) URL() string { return "tcp://" + s.Addr() }

// Stop kills the broker and waits for it to exit.
func (s *Server) Stop(tb testing.TB) {
	tb.Helper()
	s.kill()
}

// config returns the broker's config file: one listener on the loopback
// address only, anonymous clients allowed, nothing persisted, the log to
// stderr (which Start sends to a file in the temporary directory).
func (s *Server) config() string {
	var b strings.Builder
	fmt.Fprintf(&b, "listener %d 127.0.0.1\n", s.port)
	b.WriteString("allow_anonymous true\npersistence false\nlog_dest stderr\nlog_type error\nlog_type warning\nlog_type notice\n")
	if os.Geteuid() == 0 {
		// As root mosquitto would switch to the user "mosquitto", which
		// may not exist; it stays root when told so.
		b.WriteString("user root\n")
	}
	return b.String()
}

// start runs the broker and waits until it answers an MQTT CONNECT.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("mosquitto on port %d is already running", s.port)
	}
	confPath := filepath.Join(s.dir, "mosquitto.conf")
	if err := os.WriteFile(confPath, []byte(s.config()), 0o644); err != nil {
		return err
	}
	logPath := filepath.Join(s.dir, "mosquitto.log")
	cmd, end, err := proctest.Start(s.bin, []string{"-c", confPath}, logPath)
	if err != nil {
		return err
	}
	s.cmd, s.end = cmd, end
	if err := proctest.WaitReady(func() error { return handshake(s.Addr()) }, end, startTimeout); err != nil {
		s.killLocked()
		out, _ := os.ReadFile(logPath)
		return fmt.Errorf("mosquitto -c %s (port %d): %w\n%s", confPath, s.port, err, out)
	}
	return nil
}

// handshake sends an MQTT 3.1.1 CONNECT on a connection of its own and
// expects a CONNACK that accepts it, then disconnects.
func handshake(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Second))
	const clientID = "mqtttest-probe"
	// Variable header: protocol name "MQTT", level 4, clean session,
	// keep-alive 10 s; payload: the client id.
	body := []byte{0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 10, 0, byte(len(clientID))}
	body = append(body, clientID...)
	pkt := append([]byte{0x10, byte(len(body))}, body...)
	if _, err := conn.Write(pkt); err != nil {
		return err
	}
	ack := make([]byte, 4)
	if _, err := io.ReadFull(conn, ack); err != nil {
		return err
	}
	if ack[0] != 0x20 || ack[1] != 2 {
		return fmt.Errorf("answered % x, not a CONNACK", ack)
	}
	if ack[3] != 0 {
		return errors.New("CONNACK refused the connection: code " + strconv.Itoa(int(ack[3])))
	}
	_, _ = conn.Write([]byte{0xe0, 0}) // DISCONNECT
	return nil
}

// kill stops the broker if it runs.
func (s *Server) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
}

func (s *Server) killLocked() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(os.Kill)
	<-s.end
	s.cmd = nil
}
