package main

import (
	"log/slog"
	"net/netip"

	"github.com/heraldmq/herald/config"
	"github.com/heraldmq/herald/httpapi"
	"github.com/heraldmq/herald/metrics"
	"github.com/heraldmq/herald/ui"
)

// access is who may call the server: the API keys' tenants and roles, the
// key of /metrics ("" when it needs none), and the proxies believed about
// their clients.
type access struct {
	keys       map[string]string
	roles      map[string]httpapi.Role
	metricsKey string
	proxies    []netip.Prefix
}

// loadAccess reads the config's API keys, their roles and the metrics key.
func loadAccess(f *config.File) (access, error) {
	keys, err := f.Keys()
	if err != nil {
		return access{}, err
	}
	names, err := f.Roles()
	if err != nil {
		return access{}, err
	}
	roles := make(map[string]httpapi.Role, len(names))
	for key, name := range names {
		if roles[key], err = httpapi.ParseRole(name); err != nil {
			return access{}, err
		}
	}
	metricsKey, err := f.MetricsKey()
	if err != nil {
		return access{}, err
	}
	proxies, err := f.TrustedProxies()
	if err != nil {
		return access{}, err
	}
	return access{keys: keys, roles: roles, metricsKey: metricsKey, proxies: proxies}, nil
}

// watch makes m show the lanes' names when a key guards /metrics: then
// only the operator's scraper reads them.
func (a access) watch(m *metrics.Metrics) {
	if a.metricsKey != "" {
		m.ShowLaneNames()
	}
}

// adminPage returns the admin page of these keys.
func (a access) adminPage(log *slog.Logger, m *metrics.Metrics) *ui.UI {
	return ui.New(ui.Config{Keys: a.keys, Roles: a.roles, TrustedProxies: a.proxies, Logger: log, Problem: m.Problem})
}
