package main

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/carrier/calin"
	"github.com/heraldmq/herald/config"
)

// TestCalinRoutesReadTheirCredentialsFromTheEnvironment: a calin route's
// carrier takes its credentials from the variables its *_env keys name,
// and says which is missing.
func TestCalinRoutesReadTheirCredentialsFromTheEnvironment(t *testing.T) {
	t.Setenv("CALIN_TEST_USER", "admin")
	t.Setenv("CALIN_TEST_PASS", "secret")
	v1 := config.Route{Name: "m1", Carrier: config.CarrierCalinV1, BaseURL: "http://127.0.0.1:9300", Company: "Acme",
		UsernameEnv: "CALIN_TEST_USER", PasswordEnv: "CALIN_TEST_PASS"}
	c, err := calinCarrier(v1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*calin.V1); !ok {
		t.Fatalf("calin-v1 route: %T", c)
	}
	if got := c.(herald.SlowCaller).CallTimeout(); got <= calin.DefaultCreateTimeout {
		t.Errorf("a create's bound without create_timeout: %v, want the default %v and a little", got, calin.DefaultCreateTimeout)
	}
	v1.CreateTimeout = config.Duration(30 * time.Second)
	if c, err = calinCarrier(v1); err != nil || c.(herald.SlowCaller).CallTimeout() >= calin.DefaultCreateTimeout {
		t.Errorf("a create's bound with create_timeout 30s: %v, %v", c.(herald.SlowCaller).CallTimeout(), err)
	}
	v2 := config.Route{Name: "m2", Carrier: config.CarrierCalinV2, BaseURL: "http://127.0.0.1:9300", Company: "Acme",
		UserIDEnv: "CALIN_TEST_USER", PasswordEnv: "CALIN_TEST_PASS"}
	if c, err = calinCarrier(v2); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*calin.V2); !ok {
		t.Fatalf("calin-v2 route: %T", c)
	}
	for _, bad := range []struct {
		r    config.Route
		want string
	}{
		{config.Route{Carrier: config.CarrierCalinV1, BaseURL: "http://x", Company: "A", PasswordEnv: "CALIN_TEST_PASS"}, "username_env is required"},
		{config.Route{Carrier: config.CarrierCalinV2, BaseURL: "http://x", Company: "A", UserIDEnv: "CALIN_TEST_USER", PasswordEnv: "CALIN_TEST_UNSET"}, "CALIN_TEST_UNSET is not set"},
		{config.Route{Carrier: config.CarrierCalinV2, BaseURL: "http://x", UserIDEnv: "CALIN_TEST_USER", PasswordEnv: "CALIN_TEST_PASS"}, "company is empty"},
	} {
		if _, err := calinCarrier(bad.r); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", bad.r, err, bad.want)
		}
	}
}
