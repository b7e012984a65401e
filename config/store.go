package config

import (
	"fmt"
	"strings"
)

// The store kinds.
const (
	StoreSQLite = "sqlite"
	StoreRedis  = "redis"
)

// StoreSpec is a parsed store setting.
type StoreSpec struct {
	// Kind is StoreSQLite or StoreRedis.
	Kind string
	// Location is the database path (sqlite) or the whole redis:// or
	// rediss:// URL (redis).
	Location string
}

// ParseStore parses a store setting: sqlite:PATH (also sqlite://PATH),
// redis://... or rediss://...
func ParseStore(s string) (StoreSpec, error) {
	switch {
	case strings.HasPrefix(s, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(s, "sqlite:"), "//")
		if path == "" {
			return StoreSpec{}, fmt.Errorf("store %q: sqlite needs a path, e.g. sqlite:./herald.db", s)
		}
		return StoreSpec{Kind: StoreSQLite, Location: path}, nil
	case strings.HasPrefix(s, "redis:"), strings.HasPrefix(s, "rediss:"):
		return StoreSpec{Kind: StoreRedis, Location: s}, nil
	}
	return StoreSpec{}, fmt.Errorf("store %q: want sqlite:PATH, redis://HOST:PORT/DB or rediss://HOST:PORT/DB", s)
}

// StoreSpec parses f.Store.
func (f *File) StoreSpec() (StoreSpec, error) { return ParseStore(f.Store) }
