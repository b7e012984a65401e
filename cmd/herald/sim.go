package main

import (
	"fmt"
	"net"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldmq/herald/sim/calin"
	"github.com/heraldmq/herald/sim/chirpstack"
	"github.com/heraldmq/herald/sim/telegram"
	"github.com/heraldmq/herald/sim/webhooksink"
)

func simCommand() *cobra.Command {
	sim := &cobra.Command{Use: "sim", Short: "Run a carrier simulator"}
	var cfg webhooksink.Config
	var listen string
	webhook := &cobra.Command{
		Use:   "webhook",
		Short: "A webhook receiver that fails a share of requests and records every send (GET /stats, /records)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.FailRate < 0 || cfg.FailRate > 1 {
				return fmt.Errorf("--fail-rate %v: want 0..1", cfg.FailRate)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			fmt.Fprintf(cmd.ErrOrStderr(), "webhook sink listening on http://%s (fail rate %.0f%%)\n", listen, cfg.FailRate*100)
			return webhooksink.ListenAndServe(ctx, listen, webhooksink.New(cfg))
		},
	}
	f := webhook.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:9000", "address to listen on")
	f.Float64Var(&cfg.FailRate, "fail-rate", 0, "share of requests answered with --fail-status, 0..1")
	f.IntVar(&cfg.FailStatus, "fail-status", 503, "HTTP status of a failed request")
	f.DurationVar(&cfg.Delay, "delay", 0, "time taken by each request")
	f.IntVar(&cfg.FailFirst, "fail-first", 0, "fail the first N attempts of each message")
	f.Int64Var(&cfg.Seed, "seed", time.Now().UnixNano(), "random seed for --fail-rate")
	sim.AddCommand(webhook)
	sim.AddCommand(simChirpStackCommand())
	sim.AddCommand(simTelegramCommand())
	sim.AddCommand(simCalinCommand())
	sim.AddCommand(simReticulumCommand())
	return sim
}

// simCalinCommand is `herald sim calin`: the Calin smart-meter cloud API,
// V1 or V2 (package sim/calin).
func simCalinCommand() *cobra.Command {
	var cfg calin.Config
	var listen, api string
	cmd := &cobra.Command{
		Use:   "calin --api v1|v2",
		Short: "A Calin smart-meter cloud API (V1 or V2 remote tasks, created then polled; GET /_sim/tasks, /_sim/calls; POST /_sim/expire-tokens, /_sim/forget?task=ID)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch api {
			case "":
				return fmt.Errorf("--api is required: v1 or v2")
			case string(calin.V1), string(calin.V2):
				cfg.API = calin.API(api)
			default:
				return fmt.Errorf("--api %q: want v1 or v2", api)
			}
			for _, r := range []struct {
				flag string
				v    float64
			}{{"--fail-rate", cfg.FailRate}, {"--token-reject-rate", cfg.TokenRejectRate}, {"--lose-rate", cfg.LoseRate}} {
				if r.v < 0 || r.v > 1 {
					return fmt.Errorf("%s %v: want 0..1", r.flag, r.v)
				}
			}
			for _, d := range []struct {
				flag string
				v    time.Duration
			}{{"--latency", cfg.Latency}, {"--slow-create", cfg.SlowCreate}, {"--slow-poll", cfg.SlowPoll}} {
				if d.v < 0 {
					return fmt.Errorf("%s %v: want ≥ 0", d.flag, d.v)
				}
			}
			if cfg.TokenTTL <= 0 {
				return fmt.Errorf("--token-ttl %v: want > 0", cfg.TokenTTL)
			}
			if cfg.TokenRejectAtCreate && cfg.API != calin.V1 {
				return fmt.Errorf("--token-reject-at-create: V1 only")
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			fmt.Fprintf(cmd.ErrOrStderr(), "calin %s simulator listening on http://%s (company %q, user %q; latency %v, fail rate %.0f%%, token reject rate %.0f%%)\n",
				cfg.API, listen, cfg.Company, cfg.User, cfg.Latency, cfg.FailRate*100, cfg.TokenRejectRate*100)
			return calin.ListenAndServe(ctx, listen, calin.New(cfg))
		},
	}
	f := cmd.Flags()
	f.StringVar(&api, "api", "", "vendor API version to serve: v1 (COMM_Remote… with credentials in the body) or v2 (/API/User/Login bearer token, /API/RemoteMeterTask/…)")
	f.StringVar(&listen, "listen", "127.0.0.1:9100", "address to listen on")
	f.StringVar(&cfg.Company, "company", calin.DefaultCompany, "accepted company name (V1 CompanyName, V2 company)")
	f.StringVar(&cfg.User, "user", calin.DefaultUser, "accepted user (V1 UserName, V2 userId)")
	f.StringVar(&cfg.Password, "password", calin.DefaultPassword, "accepted password (a simulator's, not a secret)")
	f.StringVar(&cfg.CustomerID, "customer-id", "", "V2: the only customerId creates accept (empty: any)")
	f.StringSliceVar(&cfg.Meters, "meters", nil, "known meter numbers, comma-separated; tasks for others are refused (empty: any meter)")
	f.DurationVar(&cfg.Latency, "latency", 2*time.Second, "time from a task's creation to its result")
	f.Float64Var(&cfg.FailRate, "fail-rate", 0, "share of tasks that fail (V1 Status \"False\", V2 status 2), 0..1")
	f.Float64Var(&cfg.TokenRejectRate, "token-reject-rate", 0, "share of token tasks whose token is rejected (V1 ResultCode \"99\", V2 status 3), 0..1")
	f.Float64Var(&cfg.LoseRate, "lose-rate", 0, "share of tasks the API loses once created: their polls answer that the task does not exist, 0..1")
	f.BoolVar(&cfg.TokenRejectAtCreate, "token-reject-at-create", false, "V1: answer a rejected token on the create call (ResultCode \"99\", no task) instead of on the poll")
	f.BoolVar(&cfg.AcceptReusedTokens, "accept-reused-tokens", false, "let a meter accept a token it has already accepted (default: rejected)")
	f.DurationVar(&cfg.TokenTTL, "token-ttl", calin.DefaultTokenTTL, "V2: bearer token lifetime; calls with an expired token answer 401")
	f.DurationVar(&cfg.SlowCreate, "slow-create", 0, "delay every create call's answer by this much; the task exists at once")
	f.DurationVar(&cfg.SlowPoll, "slow-poll", 0, "delay every poll call's answer by this much (a vendor answering polls in 200ms)")
	f.Int64Var(&cfg.Seed, "seed", time.Now().UnixNano(), "random seed for --fail-rate, --token-reject-rate and --lose-rate")
	return cmd
}

// simTelegramCommand is `herald sim telegram`: the Telegram Bot API's getMe
// and sendMessage, with injected failures (package sim/telegram).
func simTelegramCommand() *cobra.Command {
	var cfg telegram.Config
	var listen, chats, blocked, kicked string
	cmd := &cobra.Command{
		Use:   "telegram",
		Short: "A Telegram Bot API (getMe, sendMessage on /bot<token>/<method>) with injected 429s, 502s, a flood limit and slow answers (GET /sim/calls, /sim/messages?chat_id=)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.Chats, cfg.AnyChat, err = telegram.ParseChatFlags(chats, blocked, kicked); err != nil {
				return err
			}
			for _, r := range []struct {
				flag string
				v    float64
			}{{"--rate-429", cfg.Faults.Rate429}, {"--rate-502", cfg.Faults.Rate502}} {
				if r.v < 0 || r.v > 1 {
					return fmt.Errorf("%s %v: want 0..1", r.flag, r.v)
				}
			}
			for _, n := range []struct {
				flag   string
				v, min int
			}{{"--next-429", cfg.Faults.Next429, 0}, {"--next-502", cfg.Faults.Next502, 0},
				{"--retry-after", cfg.Faults.RetryAfter, 1}, {"--flood-limit", cfg.FloodLimit, 0}} {
				if n.v < n.min {
					return fmt.Errorf("%s %d: want ≥ %d", n.flag, n.v, n.min)
				}
			}
			if cfg.Delay < 0 {
				return fmt.Errorf("--slow %v: want ≥ 0", cfg.Delay)
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			fmt.Fprintf(cmd.ErrOrStderr(), "telegram simulator listening: base_url http://%s, token %s, chats %q\n", ln.Addr(), cfg.Token, chats)
			return telegram.Serve(ctx, ln, telegram.New(cfg))
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8081", "address to listen on; the carrier's base_url is http://<this address>")
	f.StringVar(&cfg.Token, "token", telegram.DefaultToken, "the bot token accepted, <bot id>:<secret>; other tokens answer 401")
	f.StringVar(&chats, "chats", "any", "known chats, comma-separated: any (every integer chat id), ID, ID=@username, ID[=@username]:private|group|supergroup|channel; others answer 400 chat not found")
	f.StringVar(&blocked, "blocked", "", "chat ids whose user blocked the bot (403 Forbidden), comma-separated")
	f.StringVar(&kicked, "kicked", "", "chat ids the bot was kicked from (403 Forbidden), comma-separated")
	f.IntVar(&cfg.Faults.Next429, "next-429", 0, "answer the next N sendMessage calls 429 Too Many Requests")
	f.Float64Var(&cfg.Faults.Rate429, "rate-429", 0, "share of sendMessage calls answered 429, 0..1")
	f.IntVar(&cfg.Faults.RetryAfter, "retry-after", telegram.DefaultRetryAfter, "retry_after, in seconds, of the injected 429s")
	f.IntVar(&cfg.Faults.Next502, "next-502", 0, "answer the next N sendMessage calls 502 Bad Gateway (nginx's HTML page)")
	f.Float64Var(&cfg.Faults.Rate502, "rate-502", 0, "share of sendMessage calls answered 502, 0..1")
	f.IntVar(&cfg.FloodLimit, "flood-limit", 0, "answer 429 to a message for a chat that got this many in the last second (0: no limit)")
	f.DurationVar(&cfg.Delay, "slow", 0, "time taken by every answer (a message is delivered before the wait)")
	f.Int64Var(&cfg.Seed, "seed", time.Now().UnixNano(), "random seed for --rate-429 and --rate-502")
	return cmd
}

// simChirpStackCommand is `herald sim chirpstack`: a ChirpStack v4 network
// server with simulated devices (package sim/chirpstack).
func simChirpStackCommand() *cobra.Command {
	var cfg chirpstack.Config
	var hc chirpstack.HTTPConfig
	var mc chirpstack.MQTTConfig
	var tokens, devEUIs, headers []string
	var devices, maxPayload, mqttQoS int
	var firstEUI, class, httpSecret, httpEncoding, mqttEncoding, unknown string
	var statsEvery time.Duration
	cmd := &cobra.Command{
		Use:   "chirpstack",
		Short: "A ChirpStack v4 network server: the gRPC DeviceService queue (Enqueue, GetQueue, FlushQueue) and simulated Class-A/C devices whose up, txack, ack, log, join and status events go to an HTTP and/or MQTT integration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stderr := cmd.ErrOrStderr()
			if len(tokens) == 0 {
				tokens = []string{envOr("CHIRPSTACK_API_TOKEN", "sim-token")}
			}
			cfg.Tokens = tokens
			if class != "A" && class != "C" && class != "a" && class != "c" {
				return fmt.Errorf("--class %q: want A or C", class)
			}
			if maxPayload < 1 || maxPayload > 250 {
				return fmt.Errorf("--max-payload %d: want 1..250 bytes", maxPayload)
			}
			if len(devEUIs) > 0 {
				for _, eui := range devEUIs {
					cfg.Devices = append(cfg.Devices, chirpstack.Device{DevEUI: eui, Class: chirpstack.Class(class), MaxPayload: maxPayload})
				}
			} else {
				if devices < 1 {
					return fmt.Errorf("--devices %d: want at least 1", devices)
				}
				var first uint64
				if _, err := fmt.Sscanf(firstEUI, "%016x", &first); err != nil || len(firstEUI) != 16 {
					return fmt.Errorf("--first-dev-eui %q: want 16 hex digits", firstEUI)
				}
				if first+uint64(devices-1) < first {
					return fmt.Errorf("--first-dev-eui %s with --devices %d runs past ffffffffffffffff", firstEUI, devices)
				}
				cfg.Devices = chirpstack.SequentialDevices(devices, first, chirpstack.Class(class), maxPayload)
			}
			if hc.URL != "" {
				hc.Encoding = chirpstack.Encoding(httpEncoding)
				hc.Headers = map[string]string{}
				for _, h := range headers {
					k, v, ok := strings.Cut(h, ":")
					if !ok || strings.TrimSpace(k) == "" {
						return fmt.Errorf("--http-header %q: want \"Name: value\"", h)
					}
					hc.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
				}
				if httpSecret != "" {
					hc.Headers["Authorization"] = "Bearer " + httpSecret
				}
				cfg.HTTP = &hc
			} else if httpSecret != "" || len(headers) > 0 {
				return fmt.Errorf("--http-secret and --http-header need --http-url")
			}
			if mc.Server != "" {
				if mqttQoS < 0 || mqttQoS > 2 {
					return fmt.Errorf("--mqtt-qos %d: want 0, 1 or 2", mqttQoS)
				}
				mc.QoS = byte(mqttQoS)
				mc.Encoding = chirpstack.Encoding(mqttEncoding)
				cfg.MQTT = &mc
			}
			cfg.UnknownDevice = chirpstack.UnknownDevice(unknown)
			cfg.DisableRecords = true
			cfg.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
			s, err := chirpstack.New(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if err := s.Start(); err != nil {
				return err
			}
			defer s.Close()
			c := s.Config()
			fmt.Fprintf(stderr, "chirpstack simulator: gRPC API on %s (authorization: Bearer %s), %d class %s devices %s…%s, application %s\n",
				s.Addr(), strings.Join(c.Tokens, " | "), len(c.Devices), strings.ToUpper(class), c.Devices[0].DevEUI, c.Devices[len(c.Devices)-1].DevEUI, c.ApplicationID)
			if c.HTTP != nil {
				fmt.Fprintf(stderr, "  HTTP integration: POST %s?event=… (%s)\n", c.HTTP.URL, c.HTTP.Encoding)
			}
			if c.MQTT != nil {
				fmt.Fprintf(stderr, "  MQTT integration: %s, events on %s, commands on %s (%s)\n",
					c.MQTT.Server, chirpstack.EventTopic(c.ApplicationID, "<dev_eui>", "<event>"), chirpstack.CommandTopic(c.ApplicationID, "<dev_eui>", "down"), c.MQTT.Encoding)
			}
			if c.HTTP == nil && c.MQTT == nil {
				fmt.Fprintln(stderr, "  no integration (--http-url, --mqtt-url): events are only counted")
			}
			var tick <-chan time.Time
			if statsEvery > 0 {
				t := time.NewTicker(statsEvery)
				defer t.Stop()
				tick = t.C
			}
			for {
				select {
				case <-ctx.Done():
					s.Close()
					fmt.Fprintf(stderr, "chirpstack simulator stopped: %+v\n", s.Stats())
					return nil
				case <-tick:
					fmt.Fprintf(stderr, "%+v\n", s.Stats())
				}
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:8090", "address of the gRPC API (ChirpStack's own is :8080)")
	f.StringArrayVar(&tokens, "token", nil, "API token accepted as gRPC metadata 'authorization: Bearer <token>'; repeatable (default $CHIRPSTACK_API_TOKEN, else sim-token)")
	f.IntVar(&devices, "devices", 1, "number of devices, their DevEUIs counting up from --first-dev-eui")
	f.StringVar(&firstEUI, "first-dev-eui", "0000000000000001", "DevEUI of the first of --devices (16 hex digits)")
	f.StringArrayVar(&devEUIs, "dev-eui", nil, "a device's DevEUI (16 hex digits); repeatable; replaces --devices")
	f.StringVar(&class, "class", "A", "device class: A (downlinks only after the device's uplinks) or C (at once)")
	f.IntVar(&maxPayload, "max-payload", chirpstack.DefaultMaxPayload, "largest downlink payload in bytes (EU868 DR0: 51); longer items are dropped with a log event DOWNLINK_PAYLOAD_SIZE")
	f.StringVar(&cfg.ApplicationID, "application-id", chirpstack.DefaultApplicationID, "application id (UUID) of the devices: in events and MQTT topics")
	f.StringVar(&hc.URL, "http-url", "", "HTTP integration endpoint(s), comma-separated; events are POSTed with ?event=up|join|ack|txack|log|status")
	f.StringVar(&httpSecret, "http-secret", "", "send 'Authorization: Bearer <secret>' with every HTTP event")
	f.StringArrayVar(&headers, "http-header", nil, "extra HTTP event header, \"Name: value\"; repeatable")
	f.StringVar(&httpEncoding, "http-encoding", "json", "HTTP event body: json or protobuf")
	f.StringVar(&mc.Server, "mqtt-url", "", "MQTT broker of the MQTT integration, tcp://host:port (empty: no MQTT)")
	f.StringVar(&mc.Username, "mqtt-username", "", "MQTT username")
	f.StringVar(&mc.Password, "mqtt-password", "", "MQTT password")
	f.StringVar(&mc.ClientID, "mqtt-client-id", "", "MQTT client id (default: random)")
	f.IntVar(&mqttQoS, "mqtt-qos", 0, "QoS of MQTT events and of the command subscription: 0, 1 or 2")
	f.StringVar(&mqttEncoding, "mqtt-encoding", "json", "MQTT event and command payloads: json or protobuf")
	f.DurationVar(&cfg.GatewayDelay, "gateway-delay", 0, "time from choosing a queue item to the gateway's TX ack (the txack event)")
	f.DurationVar(&cfg.UplinkInterval, "uplink-interval", time.Minute, "period of each device's uplinks (a Class-A device's downlink opportunities); 0: none")
	f.DurationVar(&cfg.AckDelay, "ack-delay", 0, "time from a confirmed downlink to the device's uplink answering it; negative: the answer rides on the next periodic uplink")
	f.DurationVar(&cfg.ClassCTimeout, "class-c-timeout", chirpstack.DefaultClassCTimeout, "how long a Class-C confirmed downlink waits for the device's ACK before ack acknowledged=false")
	f.DurationVar(&cfg.ClassCLock, "class-c-lock", 0, "least time between two Class-C downlinks of one device (ChirpStack's class_c_lock_duration, 5s there)")
	f.Float64Var(&cfg.Loss, "loss", 0, "share of downlinks the device never receives, 0..1")
	f.Float64Var(&cfg.NackRate, "nack-rate", 0, "share of received confirmed downlinks the device answers without ACK (ack acknowledged=false), 0..1")
	f.Float64Var(&cfg.GatewayErrorRate, "gateway-error-rate", 0, "share of transmissions the gateway refuses (log DOWNLINK_GATEWAY; the item stays queued), 0..1")
	f.BoolVar(&cfg.JoinOnStart, "join", false, "every device joins at start (a join event each)")
	f.BoolVar(&cfg.FlushQueueOnJoin, "flush-queue-on-join", false, "a join flushes the device's queue (device profile flush_queue_on_activate)")
	f.IntVar(&cfg.StatusEvery, "status-every", 0, "a status event with every Nth uplink of a device (0: never)")
	f.StringVar(&unknown, "unknown-device", string(chirpstack.UnknownDeviceNotFound), "answer for an unknown DevEUI: not-found, admin-key (ChirpStack with an admin key: Enqueue Internal, GetQueue empty) or tenant-key (Unauthenticated)")
	f.BoolVar(&cfg.HonorQueueItemID, "honor-queue-item-id", false, "keep a queue_item.id given to Enqueue (ChirpStack v4.19 ignores it and assigns a new UUID)")
	f.Int64Var(&cfg.Seed, "seed", time.Now().UnixNano(), "random seed for ids, --loss, --nack-rate, --gateway-error-rate and uplink phases")
	f.DurationVar(&statsEvery, "stats-every", 10*time.Second, "print the counts this often (0: only at exit)")
	return cmd
}
