package config

import (
	"strings"
	"testing"
)

func TestOTel(t *testing.T) {
	f, err := Parse([]byte(okRoute))
	if err != nil || f.OTel != nil {
		t.Fatalf("no otel section: %+v, %v; want tracing off (OTel nil)", f.OTel, err)
	}
	f, err = Parse([]byte(okRoute + `
otel: {endpoint: "http://collector:4318", service_name: herald-eu, sample_ratio: 0.25}
`))
	if err != nil {
		t.Fatal(err)
	}
	if want := (OTel{Endpoint: "http://collector:4318", ServiceName: "herald-eu", SampleRatio: 0.25}); *f.OTel != want {
		t.Errorf("otel = %+v, want %+v", *f.OTel, want)
	}
	for _, c := range []struct{ yaml, want string }{
		{`otel: {}`, "otel: endpoint is required"},
		{`otel: {endpoint: "collector:4318"}`, "otel: endpoint:"},
		{`otel: {endpoint: "grpc://collector:4317"}`, "not an absolute http or https URL"},
		{`otel: {endpoint: "http://u:p@collector:4318"}`, "no query, fragment or credentials"},
		{`otel: {endpoint: "http://collector:4318", sample_ratio: 1.5}`, "otel: sample_ratio 1.5 is not within (0, 1]"},
		{`otel: {endpoint: "http://collector:4318", sample_ratio: -1}`, "otel: sample_ratio -1"},
		{`otel: {endpiont: "http://collector:4318"}`, "endpiont"},
	} {
		if _, err := Parse([]byte(okRoute + c.yaml)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.yaml, err, c.want)
		}
	}
}
