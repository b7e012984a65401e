package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/carrier/chirpstack"
	"github.com/heraldmq/herald/carrier/telegram"
	"github.com/heraldmq/herald/carrier/webhook"
	"github.com/heraldmq/herald/config"
	"github.com/heraldmq/herald/httpapi"
	"github.com/heraldmq/herald/internal/httpsend"
	"github.com/heraldmq/herald/metrics"
	"github.com/heraldmq/herald/notify"
	"github.com/heraldmq/herald/otelx"
	"github.com/heraldmq/herald/sim/webhooksink"
	"github.com/heraldmq/herald/stdwebhook"
	"github.com/heraldmq/herald/ui"
)

// demoSinkPath is where a server without a config serves its built-in sink.
const demoSinkPath = "/demo/sink"

// demoKey is the API key of a server without a config, unless HERALD_API_KEY is set.
// It is an admin key (role admin): the one key of one tenant may do
// everything, pausing lanes too.
const demoKey = "demo-key"

func serveCommand() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "serve [--config FILE]",
		Short: "Run the server (no config: SQLite in the working directory and a demo route)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := loadConfig(path)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			s, err := startServer(ctx, f, path == "", newLogger())
			if err != nil {
				return err
			}
			<-ctx.Done()
			return s.shutdown()
		},
	}
	cmd.Flags().StringVar(&path, "config", "", "YAML config file (see docs/CONFIG.md)")
	return cmd
}

func newLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// loadConfig reads the config file, or builds the demo config without one.
// A file must give at least one API key: without one, every request would
// be refused.
func loadConfig(path string) (*config.File, error) {
	if path != "" {
		f, err := config.Load(path)
		if err == nil && len(f.APIKeys) == 0 {
			err = fmt.Errorf("%s: api_keys: none is configured, so every request would be refused; add one, "+
				"e.g. api_keys: [{key_env: HERALD_API_KEY, tenant: default}], and set HERALD_API_KEY", path)
		}
		return f, err
	}
	f := config.Default()
	key := os.Getenv("HERALD_API_KEY")
	if key == "" {
		key = demoKey
	}
	f.APIKeys = []config.APIKey{{Key: key, Tenant: config.DefaultTenant, Role: "admin"}}
	f.Routes[0].URL = "http://" + f.Listen + demoSinkPath
	f.Egress.Allow = demoEgress
	return f, nil
}

// server is a running herald: store, engine and HTTP listener.
type server struct {
	log    *slog.Logger
	store  herald.Store
	engine *herald.Engine
	routes []herald.Route // their carriers are closed at shutdown
	http   *http.Server
	served chan error
	addr   string
	tracer *otelx.Tracer // nil when not tracing
}

// startServer opens the store, starts the engine and serves the API. With
// builtinSink it also serves a webhook sink at demoSinkPath.
func startServer(ctx context.Context, f *config.File, builtinSink bool, log *slog.Logger) (*server, error) {
	acc, err := loadAccess(f)
	if err != nil {
		return nil, err
	}
	keys := acc.keys
	routes, err := buildRoutes(f, log)
	if err != nil {
		return nil, err
	}
	for _, rc := range f.Routes {
		if rc.IngressOpen {
			log.Warn("ingress_open: this route's HTTP ingress takes events from anyone who reaches it, without a secret", "route", rc.Name, "path", "/v1/ingress/"+rc.Name)
		}
	}
	subs, err := buildSubscribers(f)
	if err != nil {
		return nil, err
	}
	store, err := openStore(f.Store)
	if err != nil {
		return nil, err
	}
	m := metrics.New()
	acc.watch(m)
	rooms, err := roomsRoute(store, f, log, m.Problem)
	if err != nil {
		store.Close()
		return nil, err
	}
	routes = append(routes, rooms)
	m.WatchCounts(store.Counts)
	m.WatchLanes(store.Lanes, metrics.TopLanes)
	tracer, err := startTracing(ctx, f, log)
	if err != nil {
		store.Close()
		return nil, err
	}
	started := false
	defer func() {
		if !started && tracer != nil {
			tracer.Shutdown(context.Background())
		}
	}()
	cfg := herald.Config{Store: store, Routes: routes, Subscribers: subs, Logger: log, Observer: m,
		Retention: f.Retention.D(), DrainBudget: f.DrainBudget.D(), Concurrency: f.Concurrency}
	if f.Health != nil {
		th := f.Health.Thresholds()
		cfg.Health = &th
	}
	var apiTracer httpapi.Tracer
	if tracer != nil {
		cfg.Tracer, apiTracer = tracer, tracer
	}
	engine, err := herald.New(cfg)
	if err != nil {
		store.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("listen: %w", err)
	}
	if err := engine.Start(ctx); err != nil {
		ln.Close()
		store.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	var sessions httpapi.Sessions
	if f.UIEnabled() {
		admin := acc.adminPage(store, log, m)
		mux.Handle(ui.Path, admin)
		mux.Handle(ui.Path+"/", admin)
		sessions = admin
	}
	mux.Handle("/", httpapi.New(httpapi.Config{Engine: engine, Keys: keys, Roles: acc.roles, MetricsKey: acc.metricsKey, Metrics: m.Handler(), Logger: log, Sessions: sessions,
		Tracer: apiTracer, MaxBodyBytesInFlight: int64(f.HTTP.MaxBodyBytesInFlight), Problem: m.Problem}))
	if builtinSink {
		mux.Handle(demoSinkPath, webhooksink.New(webhooksink.Config{}))
	}
	s := &server{log: log, store: store, engine: engine, routes: routes, served: make(chan error, 1), addr: ln.Addr().String(),
		http: newHTTPServer(mux, f.HTTP, log), tracer: tracer}
	started = true
	go func() { s.served <- s.http.Serve(newLimitListener(ln, f.HTTP.MaxConnections, log, m.Problem)) }()
	log.Info("herald serving", "listen", s.addr, "store", f.Store, "routes", len(routes))
	if f.UIEnabled() {
		log.Info("admin page", "url", "http://"+s.addr+ui.Path)
	}
	if builtinSink {
		log.Info("no config: demo route \"demo\" posts to the built-in sink", "sink", "http://"+s.addr+demoSinkPath,
			"api_key", "the value of HERALD_API_KEY, or "+demoKey+" when it is unset")
	}
	return s, nil
}

// shutdown stops taking requests, lets sends in flight finish (up to 10 s)
// and closes the store.
func (s *server) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	httpErr := s.http.Shutdown(ctx)
	engineErr := s.engine.Stop(ctx)
	for _, r := range s.routes {
		if c, ok := r.Carrier.(io.Closer); ok {
			if err := c.Close(); err != nil {
				s.log.Warn("close carrier", "route", r.Name, "err", err)
			}
		}
	}
	storeErr := s.store.Close()
	traceErr := s.tracer.Shutdown(ctx) // the spans of the last sends
	if err := <-s.served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return errors.Join(httpErr, engineErr, storeErr, traceErr)
}

// buildRoutes makes the engine's routes, with their carriers, from the
// config; the carriers that log log to log.
func buildRoutes(f *config.File, log *slog.Logger) (routes []herald.Route, err error) {
	mesh := newLXMFWiring(log)
	defer func() {
		if err == nil {
			err = mesh.link()
		}
		if err != nil {
			mesh.close()
		}
	}()
	for _, rc := range f.Routes {
		policy, err := rc.Policy()
		if err != nil {
			return nil, fmt.Errorf("route %q: %w", rc.Name, err)
		}
		var c herald.Carrier
		switch rc.Carrier {
		case config.CarrierWebhook:
			var secret []byte
			if rc.SecretEnv != "" {
				if secret, err = stdwebhook.ParseSecret(os.Getenv(rc.SecretEnv)); err != nil {
					return nil, fmt.Errorf("route %q: %s: %w", rc.Name, rc.SecretEnv, err)
				}
			}
			c, err = webhook.New(webhook.Config{URL: rc.URL, Headers: rc.Headers, Secret: secret})
		case config.CarrierChirpStack:
			// Each *_env key names a variable that must be set: an unset
			// ingress secret would let any caller in.
			env := func(key, name string) string {
				if name != "" && os.Getenv(name) == "" && err == nil {
					err = fmt.Errorf("%s: environment variable %s is not set", key, name)
				}
				return os.Getenv(name)
			}
			cc := chirpstack.Config{Server: rc.Server, TLS: rc.TLS, Send: rc.Send,
				Token: env("token_env", rc.TokenEnv), IngressSecret: env("ingress_secret_env", rc.IngressSecretEnv), IngressOpen: rc.IngressOpen}
			if mq := rc.MQTT; mq != nil {
				cc.MQTT = &chirpstack.MQTTConfig{URL: mq.URL, ApplicationID: mq.ApplicationID, ClientID: mq.ClientID,
					Username: env("mqtt.username_env", mq.UsernameEnv), Password: env("mqtt.password_env", mq.PasswordEnv)}
			}
			if err == nil {
				c, err = chirpstack.New(cc)
			}
		case config.CarrierTelegram:
			token := os.Getenv(rc.TokenEnv)
			if token == "" {
				return nil, fmt.Errorf("route %q: token_env: environment variable %s is not set (the telegram bot token)", rc.Name, rc.TokenEnv)
			}
			// Each chunk of a long text gets the accept timeout, and the
			// chunks keep the chat's spacing between them.
			c, err = telegram.New(telegram.Config{Token: token, BaseURL: rc.BaseURL,
				ChunkTimeout: policy.Timeouts.Accept, Spacing: policy.Admission.Spacing})
		case config.CarrierCalinV1, config.CarrierCalinV2:
			c, err = calinCarrier(rc)
		case config.CarrierLXMF:
			c, err = mesh.carrier(rc)
		default:
			err = fmt.Errorf("carrier %q is not available in this build", rc.Carrier)
		}
		if err != nil {
			return nil, fmt.Errorf("route %q: %w", rc.Name, err)
		}
		routes = append(routes, herald.Route{Name: rc.Name, Carrier: c, Policy: policy, Lane: rc.Lane, PermanentErrors: rc.PermanentErrors})
	}
	return routes, nil
}

// buildSubscribers makes the outcome subscribers from the config.
func buildSubscribers(f *config.File) ([]herald.Subscriber, error) {
	var subs []herald.Subscriber
	for _, sc := range f.Subscribers {
		var secret []byte
		var err error
		switch {
		case sc.Signature == config.SignatureHMAC:
			secret = []byte(os.Getenv(sc.SecretEnv)) // the shared secret's bytes, as the receivers key their HMAC
		case sc.SecretEnv != "":
			if secret, err = stdwebhook.ParseSecret(os.Getenv(sc.SecretEnv)); err != nil {
				return nil, fmt.Errorf("subscriber %s: %s: %w", httpsend.RedactString(sc.URL), sc.SecretEnv, err)
			}
		}
		sink, err := notify.New(sc.URL, secret, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("subscriber %s: %w", httpsend.RedactString(sc.URL), err)
		}
		if sc.Signature == config.SignatureHMAC {
			sink.HMAC(sc.SignatureHeader, sc.SignaturePrefix)
		}
		var types []herald.Status
		for _, t := range sc.Types {
			st, err := herald.ParseEventType(t)
			if err != nil {
				return nil, fmt.Errorf("subscriber %s: %w", httpsend.RedactString(sc.URL), err)
			}
			types = append(types, st)
		}
		subs = append(subs, herald.Subscriber{Name: sc.Name, Types: types, Retry: sc.RetryPolicy(), MaxAttempts: sc.MaxAttempts, Sink: sink})
	}
	return subs, nil
}
