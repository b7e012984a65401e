package client_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/heraldmq/herald/client"
)

// Send a message and wait for its outcome. The server here is a herald
// started in this process (see server_test.go) with a webhook route
// "hooks" whose endpoint accepts every message.
func Example() {
	srv, err := startServer(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := client.New(client.Config{URL: srv.URL, Key: "key-acme"})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	res, err := c.Send(ctx, client.SendRequest{
		Route:          "hooks",
		Text:           "your parcel is on its way",
		CorrelationID:  "order-42",
		IdempotencyKey: "order-42-shipped", // a retried send cannot queue it twice
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created:", res.Created, "status:", res.Message.Status)

	m, err := c.WaitFor(ctx, res.Message.ID, client.Terminal)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("outcome:", m.Status, "after", m.Attempt, "attempt(s)")
	var steps []string
	for _, e := range m.Timeline {
		steps = append(steps, string(e.To))
	}
	fmt.Println("timeline:", strings.Join(steps, " -> "))
	// Output:
	// created: true status: QUEUED
	// outcome: DELIVERY_SUCCESSFUL after 1 attempt(s)
	// timeline: QUEUED -> SENT_TO_NS -> DELIVERY_SUCCESSFUL
}
