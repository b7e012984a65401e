package lxmf_test

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldmq/herald/reticulum"
	"github.com/heraldmq/herald/reticulum/lxmf"
)

// A direct send and its proof, and receiving, over one TCP connection to an
// rnsd transport node.
func Example() {
	id, err := reticulum.LoadOrCreateIdentity("/var/lib/herald/lxmf/identity")
	if err != nil {
		panic(err)
	}
	node, err := reticulum.NewNode(reticulum.Config{
		Interfaces: []reticulum.Interface{reticulum.NewTCPClient("127.0.0.1:4242")},
		StorePath:  "/var/lib/herald/lxmf/store.json",
	})
	if err != nil {
		panic(err)
	}
	router, err := lxmf.NewRouter(node, lxmf.RouterConfig{
		Identity:    id,
		DisplayName: "Herald",
		OnMessage: func(m *lxmf.Received) {
			fmt.Printf("from %s: %s (id %x, signature ok %v)\n", m.Source, m.Content, m.Hash, m.SignatureValid)
		},
	})
	if err != nil {
		panic(err)
	}
	node.Start()
	defer node.Close()
	router.Announce() // the TCP client also re-announces on every reconnection

	to, _ := reticulum.ParseHash("7130b393ed9a32f20edcaa663adf956b")
	msg := router.NewMessage(to, []byte("title"), []byte("hello"), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := router.Prepare(ctx, msg); err != nil { // fixes the id (msg.Hash) for every attempt
		panic(err)
	}
	res := router.SendDirect(ctx, msg)
	if res.Outcome == lxmf.NoPath {
		node.RequestPath(to)
		wait, stop := context.WithTimeout(ctx, lxmf.PathRequestWait)
		node.WaitForPath(wait, to)
		stop()
		res = router.SendDirect(ctx, msg)
	}
	fmt.Println(res.Outcome, res.Representation, res.Err)
}
