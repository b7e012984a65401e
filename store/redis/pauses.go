package redis

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/heraldmq/herald"
)

// The operator's pauses are the fields of the hash pauses, one per route
// and lane ("route|lane", escaped; lane "" for the whole route), each a
// JSON herald.LanePause. They are few and seldom written.

// pauseField is the pauses hash's field of route and lane.
func pauseField(route, lane string) string { return esc(route) + "|" + esc(lane) }

// PauseLane keeps p in place of the pause of its route and lane.
func (s *Store) PauseLane(ctx context.Context, p herald.LanePause) error {
	v, err := json.Marshal(p)
	if err != nil {
		return wrap(ctx, "pause lane", err)
	}
	return wrap(ctx, "pause lane", s.client.HSet(ctx, s.key("pauses"), pauseField(p.Route, p.Lane), v).Err())
}

// ResumeLane deletes the pause of route and lane.
func (s *Store) ResumeLane(ctx context.Context, route, lane string) (bool, error) {
	n, err := s.client.HDel(ctx, s.key("pauses"), pauseField(route, lane)).Result()
	return n > 0, wrap(ctx, "resume lane", err)
}

// LanePauses returns the pauses kept, by route, then lane.
func (s *Store) LanePauses(ctx context.Context) ([]herald.LanePause, error) {
	h, err := s.client.HGetAll(ctx, s.key("pauses")).Result()
	if err != nil {
		return nil, wrap(ctx, "lane pauses", err)
	}
	pauses := make([]herald.LanePause, 0, len(h))
	for _, v := range h {
		var p herald.LanePause
		if err := json.Unmarshal([]byte(v), &p); err != nil {
			return nil, wrap(ctx, "lane pauses", err)
		}
		pauses = append(pauses, p)
	}
	slices.SortFunc(pauses, func(a, b herald.LanePause) int {
		if c := strings.Compare(a.Route, b.Route); c != 0 {
			return c
		}
		return strings.Compare(a.Lane, b.Lane)
	})
	return pauses, nil
}
