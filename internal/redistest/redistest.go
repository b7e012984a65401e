// Package redistest runs a private redis-server for a test: on a free
// loopback port, in the test's temporary directory, stopped when the test
// ends. It never touches an instance it did not start.
package redistest

import (
	"context"
	"fmt"
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
	goredis "github.com/redis/go-redis/v9"
)

// startTimeout bounds how long a server may take to answer PING.
const startTimeout = 15 * time.Second

// Option configures the server Start runs.
type Option func(*config)

// config is what the Options set.
type config struct {
	aof     bool
	cluster bool
}

// AOF turns on the append-only file with an fsync per write (appendonly
// yes, appendfsync always), so that what the server acknowledged survives
// Restart, which kills it. (With Redis's default, everysec, a write waiting
// behind a slow background fsync is acknowledged before it reaches the file,
// and a kill loses it.) The default is no persistence.
func AOF() Option { return func(c *config) { c.aof = true } }

// Cluster runs the server in cluster mode as a one-node cluster that owns
// every hash slot. Redis then refuses, as a real cluster does, a script or
// transaction whose keys span two slots.
func Cluster() Option { return func(c *config) { c.cluster = true } }

// Server is a redis-server started by Start.
type Server struct {
	cfg  config
	dir  string
	port int
	bin  string

	mu  sync.Mutex
	cmd *exec.Cmd     // nil while stopped
	end chan struct{} // closed when cmd has exited
}

// Start starts a redis-server for tb and stops it when tb ends. It skips
// tb when redis-server is not installed.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Skip("redis-server not found on PATH: install Debian's redis-server package (apt-get install redis-server) to run the Redis tests")
	}
	s := &Server{bin: bin, dir: tb.TempDir()}
	for _, o := range opts {
		o(&s.cfg)
	}
	tb.Cleanup(func() { s.kill() })
	for attempt := 0; ; attempt++ {
		s.port, err = proctest.FreePort()
		if err != nil {
			tb.Fatalf("redistest: %v", err)
		}
		err = s.start()
		if err == nil {
			break
		}
		if attempt == 4 { // the port was taken meanwhile, four times over
			tb.Fatalf("redistest: %v", err)
		}
	}
	if s.cfg.cluster {
		if err := s.claimSlots(); err != nil {
			tb.Fatalf("redistest: %v", err)
		}
	}
	return s
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL returns the server's database 0 as a redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Stop kills the server (SIGKILL: no chance to save anything more) and
// waits for it to exit.
func (s *Server) Stop(tb testing.TB) {
	tb.Helper()
	s.kill()
}

// Start starts a stopped server again, on the same port and directory: with
// AOF it replays its append-only file.
func (s *Server) Start(tb testing.TB) {
	tb.Helper()
	if err := s.start(); err != nil {
		tb.Fatalf("redistest: %v", err)
	}
}

// Restart kills the server and starts it again on the same port and
// directory, as a crash and a restart would.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.Stop(tb)
	s.Start(tb)
}

// args returns the server's command line.
func (s *Server) args() []string {
	aof := "no"
	if s.cfg.aof {
		aof = "yes"
	}
	args := []string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", aof, "--appendfsync", "always", "--daemonize", "no", "--protected-mode", "yes",
	}
	if s.cfg.cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(s.dir, "nodes.conf"))
	}
	return args
}

// start runs the server and waits until it answers PING.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("redis-server on port %d is already running", s.port)
	}
	logPath := filepath.Join(s.dir, "redis.log")
	cmd, end, err := proctest.Start(s.bin, s.args(), logPath)
	if err != nil {
		return err
	}
	s.cmd, s.end = cmd, end
	if err := proctest.WaitReady(func() error { return ping(s.Addr()) }, end, startTimeout); err != nil {
		s.killLocked()
		out, _ := os.ReadFile(logPath)
		return fmt.Errorf("redis-server %s: %w\n%s", strings.Join(s.args(), " "), err, out)
	}
	return nil
}

// ping sends one PING on a connection of its own.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 128)
	n, err := conn.Read(buf)
	if err != nil {
		return err
	}
	if reply := strings.TrimSpace(string(buf[:n])); reply != "+PONG" {
		return fmt.Errorf("PING answered %q", reply)
	}
	return nil
}

// claimSlots gives the one-node cluster every slot and waits until the
// cluster reports ok (Redis waits two seconds after its start before it
// does).
func (s *Server) claimSlots() error {
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		return fmt.Errorf("CLUSTER ADDSLOTSRANGE: %w", err)
	}
	for {
		info, err := c.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("CLUSTER INFO: %w", err)
		}
		if strings.Contains(info, "cluster_state:ok") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster state not ok after %v:\n%s", startTimeout, info)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// kill stops the server if it runs.
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
