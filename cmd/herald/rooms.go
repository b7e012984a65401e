package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/carrier/room"
	"github.com/heraldmq/herald/client"
	"github.com/heraldmq/herald/config"
)

// roomsRoute returns the route of the rooms' deliveries on store. A push
// subscription signs with its own secret; one made before subscriptions
// kept theirs names a variable of the server's environment (secret_env),
// which must hold a secret and must not be one that the config names for
// the server's own (an API key, a carrier's token, a route's or a
// subscriber's signing secret). Its carrier keeps to the config's egress
// policy; each address it refuses is logged and counted as the problem
// egress_refused.
func roomsRoute(store herald.Store, f *config.File, log *slog.Logger, problem func(kind string)) (herald.Route, error) {
	own := f.EnvNames()
	secret := func(name string) ([]byte, error) {
		if _, found := slices.BinarySearch(own, name); found {
			return nil, fmt.Errorf("%s holds a secret of the server's own configuration", name)
		}
		return room.Env(name)
	}
	allow, err := f.AllowedPrefixes()
	if err != nil {
		return herald.Route{}, err
	}
	refused := func(addr netip.Addr, kind string) {
		log.Warn("egress refused: a push subscription's address", "addr", addr, "kind", kind)
		problem(egressRefused)
	}
	c, err := room.New(room.Config{Store: store, Secret: secret, Allow: allow, OnRefuse: refused})
	if err != nil {
		return herald.Route{}, err
	}
	policy, err := herald.ProfilePolicy(herald.ProfileRoom)
	if err != nil {
		return herald.Route{}, err
	}
	return herald.Route{Name: herald.RoomRoutePrefix, Prefix: true, Carrier: c, Policy: policy}, nil
}

// egressRefused is the problem counted for an address the egress policy refused.
const egressRefused = "egress_refused"

// deliveryFlags are the flags of a room's or a subscription's delivery
// policy; a flag not given is left out of the request.
type deliveryFlags struct {
	delay      time.Duration
	multiplier float64
	attempts   int
}

func (d *deliveryFlags) add(cmd *cobra.Command, whose string) {
	f := cmd.Flags()
	f.DurationVar(&d.delay, "delay", 0, "wait before the first redelivery"+whose)
	f.Float64Var(&d.multiplier, "multiplier", 0, "growth of the wait per redelivery: delay × multiplier^attempt"+whose)
	f.IntVar(&d.attempts, "attempts", 0, "redeliveries after the first send; 0 sends once"+whose)
}

// overrides returns the fields of the policy that the flags given set.
func (d *deliveryFlags) overrides(cmd *cobra.Command) herald.DeliveryOverrides {
	var o herald.DeliveryOverrides
	if cmd.Flags().Changed("delay") {
		o.Delay = &d.delay
	}
	if cmd.Flags().Changed("multiplier") {
		o.Multiplier = &d.multiplier
	}
	if cmd.Flags().Changed("attempts") {
		o.Attempts = &d.attempts
	}
	return o
}

func roomsCommand() *cobra.Command {
	rooms := &cobra.Command{Use: "rooms", Short: "List, create or delete rooms"}
	var lc, cc, rc clientFlags
	var expiration time.Duration
	var delivery deliveryFlags
	list := &cobra.Command{
		Use: "ls", Short: "List the rooms", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return lc.print(cmd, http.MethodGet, "/v1/rooms", nil)
		},
	}
	create := &cobra.Command{
		Use: "create NAME [--expiration D] [--delay D] [--multiplier M] [--attempts N]", Short: "Create a room", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := client.RoomRequest{Name: args[0], Expiration: expiration, Delivery: delivery.overrides(cmd)}
			return cc.print(cmd, http.MethodPost, "/v1/rooms", req)
		},
	}
	create.Flags().DurationVar(&expiration, "expiration", 0, "a delivery's life from its event's publication, whatever its subscription; 0 is never")
	delivery.add(create, "")
	rm := &cobra.Command{
		Use: "rm NAME", Short: "Delete a room with its subscriptions; their pending deliveries end CANCELLED", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return rc.deleted(cmd, "/v1/rooms/"+url.PathEscape(args[0]), "room "+args[0])
		},
	}
	for _, c := range []struct {
		cmd *cobra.Command
		fl  *clientFlags
	}{{list, &lc}, {create, &cc}, {rm, &rc}} {
		addClientFlags(c.cmd, c.fl)
	}
	rooms.AddCommand(list, create, rm)
	return rooms
}

func subsCommand() *cobra.Command {
	subs := &cobra.Command{Use: "subs", Short: "List, create or delete a room's subscriptions"}
	var lc, cc, rc clientFlags
	var typ, hookURL, secret string
	var eventTypes []string
	var delivery deliveryFlags
	list := &cobra.Command{
		Use: "ls ROOM", Short: "List a room's subscriptions", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return lc.print(cmd, http.MethodGet, "/v1/rooms/"+url.PathEscape(args[0])+"/subscriptions", nil)
		},
	}
	create := &cobra.Command{
		Use:   "create ROOM --type push --url URL [--secret whsec_...] | --type pull; [--event-type TYPE[:VERSION]]... [--delay D] [--multiplier M] [--attempts N]",
		Short: "Subscribe to a room's events", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := client.SubscriptionRequest{Type: herald.SubscriptionType(typ), URL: hookURL, Secret: secret,
				Delivery: delivery.overrides(cmd)}
			for _, et := range eventTypes {
				t, v, _ := strings.Cut(et, ":")
				req.EventTypes = append(req.EventTypes, herald.EventType{Type: t, Version: v})
			}
			return cc.print(cmd, http.MethodPost, "/v1/rooms/"+url.PathEscape(args[0])+"/subscriptions", req)
		},
	}
	f := create.Flags()
	f.StringVar(&typ, "type", "", "push (herald POSTs each delivery) or pull (herald pull SUB fetches them)")
	f.StringVar(&hookURL, "url", "", "push: where the deliveries are POSTed")
	f.StringVar(&secret, "secret", "", "push: the signing secret, whsec_ and base64 (default: herald generates one, shown once in the answer)")
	f.StringArrayVar(&eventTypes, "event-type", nil, "take only events of this TYPE[:VERSION] (repeatable; none takes every event)")
	delivery.add(create, " (default: the room's)")
	_ = create.MarkFlagRequired("type")
	rm := &cobra.Command{
		Use: "rm ID", Short: "Delete a subscription; its pending deliveries end CANCELLED", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return rc.deleted(cmd, "/v1/subscriptions/"+url.PathEscape(args[0]), "subscription "+args[0])
		},
	}
	for _, c := range []struct {
		cmd *cobra.Command
		fl  *clientFlags
	}{{list, &lc}, {create, &cc}, {rm, &rc}} {
		addClientFlags(c.cmd, c.fl)
	}
	subs.AddCommand(list, create, rm)
	return subs
}

func publishCommand() *cobra.Command {
	var c clientFlags
	var data, version, correlation string
	var subs []string
	cmd := &cobra.Command{
		Use:   "publish ROOM TYPE [--data JSON] [--version V] [--correlation-id ID] [--subscription ID]...",
		Short: "Publish an event to a room: one delivery per subscription that takes it",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := client.PublishRequest{Type: args[1], Version: version, CorrelationID: correlation, Subscriptions: subs}
			if data != "" {
				if !json.Valid([]byte(data)) {
					return fmt.Errorf("--data: not JSON")
				}
				req.Data = json.RawMessage(data)
			}
			return c.print(cmd, http.MethodPost, "/v1/rooms/"+url.PathEscape(args[0])+"/events", req)
		},
	}
	addClientFlags(cmd, &c)
	cmd.Flags().StringVar(&data, "data", "", "the event's data, JSON")
	cmd.Flags().StringVar(&version, "version", "", "the event type's version")
	cmd.Flags().StringVar(&correlation, "correlation-id", "", "your own id; its deliveries are listed by it")
	cmd.Flags().StringSliceVar(&subs, "subscription", nil, "deliver to this subscription of the room only, if it takes the event (repeat, or comma-separate, for several)")
	return cmd
}

func pullCommand() *cobra.Command {
	var fl clientFlags
	var max int
	var lease time.Duration
	var ack bool
	cmd := &cobra.Command{
		Use:   "pull SUB [--max N] [--lease D] [--ack]",
		Short: "Lease the waiting deliveries of a pull subscription and print them",
		Long: "Lease the waiting deliveries of a pull subscription and print them, each with its lease_id,\n" +
			"which herald ack and herald nack take. With --ack, acknowledge them once printed, under\n" +
			"the leases this pull took.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(fl.output); err != nil {
				return err
			}
			c, err := fl.client()
			if err != nil {
				return err
			}
			path := "/v1/subscriptions/" + url.PathEscape(args[0])
			answer, err := call(cmd, c, http.MethodPost, path+"/pull", client.PullRequest{Max: max, Lease: lease})
			if err != nil {
				return err
			}
			if err := fl.write(cmd, answer, renderPulled); err != nil || !ack {
				return err
			}
			var pulled struct {
				Deliveries []herald.DeliveryView `json:"deliveries"`
			}
			if err := json.Unmarshal(answer, &pulled); err != nil {
				return err
			}
			leaseIDs := make([]string, len(pulled.Deliveries))
			for i, d := range pulled.Deliveries {
				leaseIDs[i] = d.LeaseID
			}
			if answer, err = call(cmd, c, http.MethodPost, path+"/ack", settleRequest{LeaseIDs: leaseIDs}); err != nil {
				return err
			}
			return fl.write(cmd, answer, renderAny)
		},
	}
	addClientFlags(cmd, &fl)
	cmd.Flags().IntVar(&max, "max", herald.DefaultPull, "lease at most this many")
	cmd.Flags().DurationVar(&lease, "lease", herald.DefaultLease, "until an unacknowledged delivery comes back")
	cmd.Flags().BoolVar(&ack, "ack", false, "acknowledge what was pulled once printed")
	return cmd
}

// settleRequest is the body of an ack or a nack.
type settleRequest struct {
	LeaseIDs []string `json:"lease_ids"`
}

// settleCommand is herald ack or herald nack (verb), which settles the
// deliveries of a pull subscription that lease ids name.
func settleCommand(verb, short, long string) *cobra.Command {
	var c clientFlags
	cmd := &cobra.Command{
		Use:   verb + " SUB LEASE_ID...",
		Short: short,
		Long:  long,
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.print(cmd, http.MethodPost, "/v1/subscriptions/"+url.PathEscape(args[0])+"/"+verb, settleRequest{LeaseIDs: args[1:]})
		},
	}
	addClientFlags(cmd, &c)
	return cmd
}

func ackCommand() *cobra.Command {
	return settleCommand("ack", "Acknowledge pulled deliveries, by the lease_id each pull gave",
		"Acknowledge the deliveries of a pull subscription that the lease ids name (the lease_id of each\n"+
			"delivery, as herald pull printed it): each still held ends DELIVERY_SUCCESSFUL. Prints\n"+
			"{\"acked\":N,\"lost\":[...]}: lost lists the leases no longer held (the lease ran out, the\n"+
			"delivery was pulled again), which changed nothing.")
}

func nackCommand() *cobra.Command {
	return settleCommand("nack", "Hand pulled deliveries back, by the lease_id each pull gave",
		"Hand back the deliveries of a pull subscription that the lease ids name: each still held comes\n"+
			"back after its backoff, or ends DELIVERY_FAILED when its attempts are used up. Prints\n"+
			"{\"nacked\":N,\"lost\":[...]}: lost lists the leases no longer held, which changed nothing.")
}
