package main

import (
	"fmt"
	"os"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/carrier/calin"
	"github.com/heraldmq/herald/config"
)

// calinCarrier makes a calin-v1 or calin-v2 route's carrier. Its
// credentials come from the environment variables the route's *_env keys
// name, each required and set.
func calinCarrier(rc config.Route) (herald.Carrier, error) {
	var err error
	env := func(key, name, what string) string {
		switch {
		case err != nil:
		case name == "":
			err = fmt.Errorf("%s is required for a %s route: the environment variable that holds %s", key, rc.Carrier, what)
		case os.Getenv(name) == "":
			err = fmt.Errorf("%s: environment variable %s is not set (%s)", key, name, what)
		}
		return os.Getenv(name)
	}
	if rc.Carrier == config.CarrierCalinV1 {
		cfg := calin.V1Config{BaseURL: rc.BaseURL, Company: rc.Company,
			Username: env("username_env", rc.UsernameEnv, "the Calin user name"),
			Password: env("password_env", rc.PasswordEnv, "the Calin password"), RetryFailedTasks: rc.RetryFailedTasks,
			CreateTimeout: rc.CreateTimeout.D()}
		if err != nil {
			return nil, err
		}
		return calin.NewV1(cfg)
	}
	cfg := calin.V2Config{BaseURL: rc.BaseURL, Company: rc.Company,
		UserID:   env("user_id_env", rc.UserIDEnv, "the Calin user id"),
		Password: env("password_env", rc.PasswordEnv, "the Calin password"), RetryFailedTasks: rc.RetryFailedTasks,
		CreateTimeout: rc.CreateTimeout.D()}
	if err != nil {
		return nil, err
	}
	return calin.NewV2(cfg)
}
