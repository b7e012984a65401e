// Package client is a Go client of herald's HTTP API (api/openapi.json): typed
// requests, herald's own view types for the answers, errors that carry the
// API's code, and retries when the server's store is briefly unavailable.
//
//	c, err := client.New(client.Config{URL: "http://127.0.0.1:8080", Key: os.Getenv("HERALD_API_KEY")})
//	if err != nil {
//		return err
//	}
//	res, err := c.Send(ctx, client.SendRequest{Route: "hooks", Text: "hello", IdempotencyKey: "order-42"})
//	if err != nil {
//		return err
//	}
//	m, err := c.WaitFor(ctx, res.Message.ID, client.Terminal)
//	if err != nil {
//		return err
//	}
//	fmt.Println(m.Status) // DELIVERY_SUCCESSFUL, DELIVERY_FAILED or CANCELLED
//
// Every method takes a context, which bounds the whole call, retries and
// their waits included.
//
// # Rooms
//
// A room fans each event published to it (Publish) out to its
// subscriptions (CreateSubscription), one delivery each: pushed to a push
// subscription's URL by the server, leased by a pull subscriber with Pull
// and settled with Ack or Nack, which name each delivery's lease (its
// LeaseID), so that a lease that ran out settles nothing; each answers
// the leases no longer held. Each delivery is a message of route
// "room:<name>": Get, List, Cancel and Replay work on it.
//
// # Errors
//
// An answer outside 2xx is returned as an *Error (wrapped; use errors.As)
// with the HTTP status and the API's code, e.g. 404 "not_found" or 400
// "invalid_field" with a message naming the field (Error.Field). IsNotFound,
// IsInvalid, IsConflict, IsUnauthorized and IsUnavailable test the common
// cases; ErrorCode returns the code.
//
// # Retries
//
// An answer 503 with the code "store_unavailable" means the server's store
// did not answer: the request is tried again, at most Config.MaxRetries
// times, after the wait the Retry-After header asks for or else an
// exponential backoff with jitter, for as long as the context allows. Reads,
// cancels, replays, purges, deletions, CreateRoom (a repeat is 409
// room_exists), Ack and Nack are retried, as is a Send that carries an
// IdempotencyKey (a repeat returns the first message). A Send without one is
// not: had its answer been lost after the message was stored, a retry would
// queue the message twice; nor are CreateSubscription, Publish and Pull, for
// the same reason. No other answer, and no network error, is retried.
package client
