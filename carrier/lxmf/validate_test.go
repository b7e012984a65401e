package lxmf

import (
	"errors"
	"strings"
	"testing"

	"github.com/heraldmq/herald"
)

// TestValidateNamesTheBadField: a message whose target is not an LXMF
// address, that names another parameter than title, that gives both a
// text and a payload, or that is larger than LXMF carries is refused,
// naming the field; a good one passes, in either case of hex.
func TestValidateNamesTheBadField(t *testing.T) {
	addr := strings.Repeat("0a", 16)
	cases := []struct {
		m     herald.Message
		field string
	}{
		{herald.Message{Target: addr, Text: "hi", Params: map[string]string{"title": "t"}}, ""},
		{herald.Message{Target: strings.ToUpper(addr), Payload: []byte{1, 2}}, ""},
		{herald.Message{Target: "", Text: "hi"}, "target"},
		{herald.Message{Target: addr[:30], Text: "hi"}, "target"},
		{herald.Message{Target: addr + "00", Text: "hi"}, "target"},
		{herald.Message{Target: strings.Repeat("zz", 16), Text: "hi"}, "target"},
		{herald.Message{Target: "@" + addr[1:], Text: "hi"}, "target"},
		{herald.Message{Target: addr, Text: "hi", Params: map[string]string{"priority": "x"}}, "params"},
		{herald.Message{Target: addr, Text: "hi", Payload: []byte{1}}, "payload"},
		{herald.Message{Target: addr, Text: strings.Repeat("x", 1<<20)}, "text"},
	}
	c := &Carrier{}
	for i, tc := range cases {
		err := c.Validate(&tc.m)
		var inv *herald.InvalidError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("case %d: %v, want valid", i, err)
		case tc.field != "" && (!errors.As(err, &inv) || inv.Field != tc.field):
			t.Errorf("case %d: %v, want an error naming %s", i, err, tc.field)
		}
	}
}
