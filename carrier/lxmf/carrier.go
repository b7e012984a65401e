package lxmf

import (
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/reticulum"
	lxm "github.com/heraldmq/herald/reticulum/lxmf"
)

// Method is how a route delivers: opportunistic, direct or propagated.
type Method string

// The methods, as a route's method key names them.
const (
	Opportunistic Method = "opportunistic"
	Direct        Method = "direct"
	Propagated    Method = "propagated"
)

// ParamTitle is the message parameter that sets the LXMF title.
const ParamTitle = "title"

// Config configures a route's carrier.
type Config struct {
	// Endpoint is herald's node and identity; routes may share one.
	Endpoint *Endpoint
	// Method is how messages go; default Direct.
	Method Method
	// PropagationNode is the lxmf.propagation hash of the node that
	// Propagated messages are uploaded to. Required for Propagated.
	PropagationNode reticulum.Hash
	// WaitForPath, when positive, lets a message whose recipient has no
	// path wait for one without spending attempts, until it is that old.
	WaitForPath time.Duration
	// Now is the engine's clock, against which a message's age is told
	// (WaitForPath); default time.Now.
	Now func() time.Time
	// Logger receives the carrier's lines; default the endpoint's.
	Logger *slog.Logger
}

// Carrier sends a route's messages over LXMF (a push carrier): each send
// is one attempt of the reference's outbound loop, its proof (or a
// propagation node's acceptance) comes back as an event.
type Carrier struct {
	cfg    Config
	ep     *Endpoint
	log    *slog.Logger
	events chan event
	stop   chan struct{} // closed by Close: the watches of proofs end
	once   sync.Once
	// fallback is the route whose method (and propagation node) a
	// message's last attempt takes (SetFallback), or nil.
	fallback *Carrier
}

// SetFallback makes the last attempt of each message go by f's method
// (and f's propagation node) instead of c's: with method direct and a
// propagated fallback, a recipient not reached directly in the first
// attempts gets the message through the propagation node at the last.
// Without one a message never changes method, as LXMF never falls back
// by itself. Call it before the engine starts.
func (c *Carrier) SetFallback(f *Carrier) { c.fallback = f }

// New returns the carrier of a route on cfg.Endpoint.
func New(cfg Config) (*Carrier, error) {
	if cfg.Endpoint == nil {
		return nil, errors.New("lxmf: an endpoint is required")
	}
	switch cfg.Method {
	case "":
		cfg.Method = Direct
	case Opportunistic, Direct:
	case Propagated:
		if cfg.PropagationNode == (reticulum.Hash{}) {
			return nil, errors.New("lxmf: method propagated needs a propagation node")
		}
	default:
		return nil, fmt.Errorf("lxmf: method %q: want opportunistic, direct or propagated", cfg.Method)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = cfg.Endpoint.log
	}
	c := &Carrier{cfg: cfg, ep: cfg.Endpoint, log: cfg.Logger, events: make(chan event, eventQueue), stop: make(chan struct{})}
	c.ep.use(c.received)
	return c, nil
}

// Path is push: a send hands the message to the network (DELIVERED_TO_NS
// once it is on the wire), its proof ends it.
func (c *Carrier) Path() herald.Path { return herald.PathPush }

// sendCallTimeout bounds a send: a resource's parts go out as the
// receiver asks for them, which takes minutes on a slow link; the engine
// keeps the message's claim alive meanwhile.
const sendCallTimeout = 5 * time.Minute

// CallTimeout bounds a send's call in place of the route's accept
// timeout (herald.SlowCaller): a resource may take long to go out.
func (c *Carrier) CallTimeout() time.Duration { return sendCallTimeout }

// Lane is the recipient: one message in flight per recipient by default.
func (c *Carrier) Lane(m *herald.Message) string { return m.Target }

// Close stops watching for proofs and releases the endpoint (the last
// route's closes its node).
func (c *Carrier) Close() error {
	err := error(nil)
	c.once.Do(func() {
		close(c.stop)
		err = c.ep.release()
	})
	return err
}

// sizer signs the messages Validate packs to measure them.
var sizer, _ = reticulum.NewIdentity()

// Validate checks a message: target an LXMF address (32 hex characters),
// text (or payload) the content, params.title the only parameter, and the
// whole within what one resource carries.
func (c *Carrier) Validate(m *herald.Message) error {
	dest, err := parseAddress(m.Target)
	if err != nil {
		return herald.Invalid("target", "%v", err)
	}
	for k := range m.Params {
		if k != ParamTitle {
			return herald.Invalid("params", "unknown parameter %q for an lxmf message (want title)", clip(k))
		}
	}
	if m.Text != "" && len(m.Payload) > 0 {
		return herald.Invalid("payload", "an lxmf message takes a text or a payload as its content, not both")
	}
	msg := &lxm.Message{Destination: dest, Title: []byte(m.Params[ParamTitle]), Content: content(m), Timestamp: 1}
	if err := msg.Pack(sizer); err != nil {
		return herald.Invalid("text", "%v", err)
	}
	if n := len(msg.Packed); n > reticulum.MaxResourceSize {
		return herald.Invalid("text", "the message packs to %d bytes; LXMF carries at most %d", n, reticulum.MaxResourceSize)
	}
	return nil
}

// parseAddress reads an LXMF address: 32 hex characters, either case.
func parseAddress(s string) (reticulum.Hash, error) {
	var h reticulum.Hash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != reticulum.TruncatedHashLen {
		return h, fmt.Errorf("%q is not an LXMF address: want the recipient's lxmf.delivery hash, 32 hex characters", clip(s))
	}
	copy(h[:], b)
	return h, nil
}

// content is what the message carries: its text, else its payload.
func content(m *herald.Message) []byte {
	if m.Text != "" {
		return []byte(m.Text)
	}
	return m.Payload
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
