package calin

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/heraldmq/herald"
)

// The message params the carriers read.
const (
	ParamCommand    = "command"     // reading, control, write (V1) or setting (V2), token
	ParamDataItem   = "data_item"   // V1: the DataItem ("Current Credit Register", "Switch On", "Date", …)
	ParamData       = "data"        // V1 write, V2 setting: the value written
	ParamToken      = "token"       // token: the STS token delivered to the meter
	ParamProtocolID = "protocol_id" // V2: the protocolId (39 credit, 20000 relay on, 10000 clock, …)
	ParamCustomerID = "customer_id" // V2: the customerId; V2Config.CustomerID when absent
)

// The commands of params.command. CommandWrite is V1's name and
// CommandSetting V2's for the same family of tasks.
const (
	CommandReading = "reading"
	CommandControl = "control"
	CommandWrite   = "write"
	CommandSetting = "setting"
	CommandToken   = "token"
)

// V2ProtocolToken is the protocolId of a V2 token task when the message
// names none.
const V2ProtocolToken = 30000

// requiredLane is what a Calin message's lane is, for the error that
// refuses a message without one on a route without a default lane.
const requiredLane = "the DCU the meter is reached through (the taskpoll profile runs 5 tasks at a time per DCU)"

// maxField bounds a target or a param the vendor is sent.
const maxField = 128

// task is what a message asks of the vendor, read from its target and
// params.
type task struct {
	command    string
	meter      string
	dataItem   string // V1
	protocolID int    // V2
	data       string // V1 write, V2 setting
	token      string
	customerID string // V2
}

// readParams checks that m's params are those of version's command (allowed
// lists each command's params, the first of them required unless the
// command is token on V2) and returns the task with the command and the
// meter set.
func readParams(m *herald.Message, version string, commands []string, allowed map[string][]string) (task, error) {
	t := task{meter: m.Target}
	if err := checkField("target", m.Target); err != nil {
		return t, err
	}
	t.command = m.Params[ParamCommand]
	if t.command == "" {
		return t, herald.Invalid("params.command", "is required for a %s message (want %s)", version, strings.Join(commands, ", "))
	}
	if !slices.Contains(commands, t.command) {
		hint := ""
		switch {
		case t.command == CommandSetting && version == "calin-v1":
			hint = " (calin-v1 calls a setting write)"
		case t.command == CommandWrite && version == "calin-v2":
			hint = " (calin-v2 calls a write setting)"
		}
		return t, herald.Invalid("params.command", "%q: want %s%s", t.command, strings.Join(commands, ", "), hint)
	}
	known := map[string]bool{ParamCommand: true}
	for _, ps := range allowed {
		for _, p := range ps {
			known[p] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m.Params)) {
		v := m.Params[k]
		switch {
		case !known[k]:
			return t, herald.Invalid("params", "unknown parameter %q for a %s message (want %s)", k, version, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		case k != ParamCommand && !slices.Contains(allowed[t.command], k):
			return t, herald.Invalid("params."+k, "a %s command takes no %s (it takes %s)", t.command, k, strings.Join(allowed[t.command], ", "))
		}
		if err := checkField("params."+k, v); err != nil {
			return t, err
		}
	}
	return t, nil
}

// checkField checks a value the vendor is sent in a JSON string: at most
// maxField bytes of printable text, without surrounding space.
func checkField(field, v string) error {
	switch {
	case v == "":
		return herald.Invalid(field, "is empty")
	case len(v) > maxField:
		return herald.Invalid(field, "is %d bytes long, over %d", len(v), maxField)
	case strings.TrimSpace(v) != v:
		return herald.Invalid(field, "%q has space around it", v)
	case strings.IndexFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return herald.Invalid(field, "%q holds a character that is not printable", v)
	}
	return nil
}

// require returns an *herald.InvalidError when param is absent from m.
func require(m *herald.Message, param, what string) error {
	if m.Params[param] == "" {
		return herald.Invalid("params."+param, "is required: %s", what)
	}
	return nil
}

// protocolID reads params.protocol_id: a positive integer.
func protocolID(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n > 1_000_000 {
		return 0, herald.Invalid("params."+ParamProtocolID, "%q: want the task's protocolId, a positive integer (39 credit, 20000 relay on, 20001 relay off, 10000 clock, 30000 token)", v)
	}
	return n, nil
}

// describe names a task for an error text: its command and meter.
func (t task) describe() string {
	return fmt.Sprintf("%s task for meter %s", t.command, t.meter)
}
