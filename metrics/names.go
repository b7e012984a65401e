package metrics

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync/atomic"

	"github.com/heraldmq/herald"
)

// routeLabel is the route label of route: a room's route ("room:" and the
// room's name, which its tenant chose) is "room:", so that no label
// carries a tenant's room name and rooms made at run time add no series.
func routeLabel(route string) string {
	if strings.HasPrefix(route, herald.RoomRoutePrefix) {
		return herald.RoomRoutePrefix
	}
	return route
}

// laneNames makes the lane labels. A lane's name is the tenant's (a chat
// id, a gateway), so by default the label is a pseudonym: "h-" and 12 hex
// digits of an HMAC of the route and lane under a key random to this
// process, the same for a lane as long as the process runs, and of no use
// for guessing the name. Shown, the label is the name.
type laneNames struct {
	key   []byte
	shown atomic.Bool
}

func newLaneNames() *laneNames {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	return &laneNames{key: key}
}

// label returns the lane label of route's lane.
func (n *laneNames) label(route, lane string) string {
	if n.shown.Load() {
		return lane
	}
	mac := hmac.New(sha256.New, n.key)
	mac.Write([]byte(route))
	mac.Write([]byte{0})
	mac.Write([]byte(lane))
	return "h-" + hex.EncodeToString(mac.Sum(nil)[:6])
}
