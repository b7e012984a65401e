package redistest

import (
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// TestRestartReplaysAOF writes a key, restarts the server with a SIGKILL and
// reads the key back from the append-only file.
func TestRestartReplaysAOF(t *testing.T) {
	srv := Start(t, AOF())
	opt, err := goredis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.MaxRetries, opt.DialerRetries = -1, 1
	c := goredis.NewClient(opt)
	defer c.Close()
	if err := c.Set(t.Context(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	srv.Restart(t)
	if v, err := c.Get(t.Context(), "k").Result(); err != nil || v != "v" {
		t.Fatalf("after a restart: Get = %q, %v; want v", v, err)
	}
	srv.Stop(t)
	if err := c.Ping(t.Context()).Err(); err == nil {
		t.Fatal("Ping succeeded with the server stopped")
	}
}

// TestCluster checks that a cluster server serves every slot.
func TestCluster(t *testing.T) {
	srv := Start(t, Cluster())
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{srv.Addr()}})
	defer c.Close()
	for _, k := range []string{"a", "b", "{x}:c"} {
		if err := c.Set(t.Context(), k, "v", 0).Err(); err != nil {
			t.Fatalf("Set %s: %v", k, err)
		}
	}
}
