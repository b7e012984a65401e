package lxmf

import (
	"bytes"

	"github.com/vmihailenco/msgpack/v5"
)

// sfCompression is the reference's "supported functionality" code for
// compression.
const sfCompression = 0x00

// DeliveryAppData packs the app data an lxmf.delivery destination
// announces: [display name, stamp cost, supported functionality]. A cost of
// 0 (or outside 1..254) announces no stamp requirement.
func DeliveryAppData(displayName string, stampCost int) ([]byte, error) {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	if err := e.EncodeArrayLen(3); err != nil {
		return nil, err
	}
	var err error
	if displayName == "" {
		err = e.EncodeNil()
	} else {
		err = e.EncodeBytes([]byte(displayName))
	}
	if err != nil {
		return nil, err
	}
	if stampCost > 0 && stampCost < 255 {
		err = e.EncodeInt(int64(stampCost))
	} else {
		err = e.EncodeNil()
	}
	if err != nil {
		return nil, err
	}
	if err := e.Encode([]int{sfCompression}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// isPeerData reports whether app data is the msgpack-list form LXMF 0.5+
// announces (rather than a bare display name).
func isPeerData(app []byte) bool {
	return len(app) > 0 && ((app[0] >= 0x90 && app[0] <= 0x9f) || app[0] == 0xdc)
}

// DisplayName reads the display name from an lxmf.delivery announce's app
// data ("" if none).
func DisplayName(app []byte) string {
	if len(app) == 0 {
		return ""
	}
	if !isPeerData(app) {
		return string(app)
	}
	var v []any
	if unmarshalLoose(app, &v) != nil || len(v) < 1 {
		return ""
	}
	switch x := v[0].(type) {
	case []byte:
		return string(x)
	case string:
		return x
	}
	return ""
}

// StampCost reads the stamp cost from an lxmf.delivery announce's app data;
// 0 means none is required.
func StampCost(app []byte) int {
	if !isPeerData(app) {
		return 0
	}
	var v []any
	if unmarshalLoose(app, &v) != nil || len(v) < 2 {
		return 0
	}
	c, _ := asInt(v[1])
	return c
}

// PropagationNodeConfig is what an lxmf.propagation announce tells.
type PropagationNodeConfig struct {
	Enabled          bool // the node propagates
	TransferLimitKB  int  // per-transfer limit in kilobytes
	StampCost        int  // the propagation stamp cost it targets
	StampFlexibility int  // how far below the target it still accepts
	PeeringCost      int
	Name             string
}

// ParsePropagationAppData reads an lxmf.propagation announce's app data, as
// the reference validates it: [legacy, timebase, enabled, transfer limit,
// sync limit, [stamp cost, flexibility, peering cost], metadata].
func ParsePropagationAppData(app []byte) (PropagationNodeConfig, bool) {
	var c PropagationNodeConfig
	var v []any
	if unmarshalLoose(app, &v) != nil || len(v) < 7 {
		return c, false
	}
	en, ok := v[2].(bool)
	costs, ok2 := v[5].([]any)
	meta, ok3 := v[6].(map[any]any)
	if !ok || !ok2 || !ok3 || len(costs) < 3 {
		return c, false
	}
	var ok4, ok5, ok6, ok7 bool
	c.Enabled = en
	c.TransferLimitKB, ok4 = asInt(v[3])
	c.StampCost, ok5 = asInt(costs[0])
	c.StampFlexibility, ok6 = asInt(costs[1])
	c.PeeringCost, ok7 = asInt(costs[2])
	if !ok4 || !ok5 || !ok6 || !ok7 {
		return c, false
	}
	for k, val := range meta {
		if i, ok := asInt(k); ok && i == 0x01 {
			if b, ok := val.([]byte); ok {
				c.Name = string(b)
			}
		}
	}
	return c, true
}
