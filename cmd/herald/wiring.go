package main

import (
	"fmt"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/config"
	"github.com/heraldmq/herald/store/redis"
	"github.com/heraldmq/herald/store/sqlite"
)

// openStore opens the store that a config's store setting names.
func openStore(setting string) (herald.Store, error) {
	spec, err := config.ParseStore(setting)
	if err != nil {
		return nil, err
	}
	switch spec.Kind {
	case config.StoreSQLite:
		return sqlite.Open(spec.Location)
	case config.StoreRedis:
		return redis.Open(spec.Location)
	default:
		return nil, fmt.Errorf("store %q: unknown kind %q", setting, spec.Kind)
	}
}
