package redis

import "context"

// FirstActive returns the oldest message of route and target that is not
// terminal, or "": the first of the target's tgt, which holds the active
// messages of ordered routes only (see lua/lib.lua), so "" on another
// route.
func (s *Store) FirstActive(ctx context.Context, route, target string) (string, error) {
	ids, err := s.client.ZRange(ctx, s.key("tgt:"+esc(route)+"|"+esc(target)), 0, 0).Result()
	if err != nil || len(ids) == 0 {
		return "", wrap(ctx, "first active", err)
	}
	return ids[0], nil
}
