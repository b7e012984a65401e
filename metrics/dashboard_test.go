package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDashboardQueriesKnownSeries: every series the Grafana dashboard in
// deploy/ queries is one that herald's /metrics exports (its own, and the
// Go and process collectors'), so that a renamed metric cannot leave a
// panel empty.
func TestDashboardQueriesKnownSeries(t *testing.T) {
	data, err := os.ReadFile("../deploy/grafana/herald.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	exported := map[string]bool{}
	fqName := regexp.MustCompile(`fqName: "([a-z_:]+)"`)
	descs := make(chan *prometheus.Desc, 1024)
	m := New()
	for _, c := range m.herald() {
		c.Describe(descs)
	}
	close(descs)
	for d := range descs {
		if name := fqName.FindStringSubmatch(d.String()); name != nil {
			exported[name[1]] = true
		}
	}
	families, err := m.reg.Gather() // the Go and process collectors' series
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		exported[f.GetName()] = true
	}
	series := regexp.MustCompile(`\b((?:herald|go|process)_[a-z_]+)`)
	queried := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, target := range p.Targets {
			for _, name := range series.FindAllString(target.Expr, -1) {
				queried++
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					base = strings.TrimSuffix(base, suffix)
				}
				if !exported[name] && !exported[base] {
					t.Errorf("panel %q queries %s, which herald does not export", p.Title, name)
				}
			}
		}
	}
	if queried < 10 {
		t.Errorf("the dashboard queries %d series, want its panels' (10 or more)", queried)
	}
}
