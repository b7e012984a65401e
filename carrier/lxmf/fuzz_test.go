package lxmf

import (
	"errors"
	"testing"

	"github.com/heraldmq/herald"
)

// FuzzReadEvent: any event body is read or refused with an *InvalidError,
// never a panic; a proof names the message it proves.
func FuzzReadEvent(f *testing.F) {
	for _, s := range [][2]string{
		{EventDelivered, `{"hash":"ab","how":"proved by the recipient"}`},
		{EventRejected, `{"hash":"ab","reason":"declined"}`},
		{EventMessage, `{"hash":"ab","source":"cd","content":"hi"}`},
		{EventDelivered, `{}`}, {EventDelivered, `[`}, {"txack", `{"hash":"ab"}`}, {"", ""},
	} {
		f.Add(s[0], []byte(s[1]))
	}
	c := &Carrier{}
	f.Fuzz(func(t *testing.T, typ string, body []byte) {
		ev, ok, err := c.ReadEvent(typ, "application/json", body)
		var inv *herald.InvalidError
		switch {
		case err != nil && !errors.As(err, &inv):
			t.Fatalf("error %v is not an InvalidError", err)
		case err == nil && !ok:
			t.Fatal("an event neither read nor refused")
		case err == nil && ev.Kind != herald.InboundMessage && ev.ExternalID == "":
			t.Fatalf("a proof of no message: %+v", ev)
		}
	})
}

// FuzzValidate: any message is valid or refused naming a field, never a
// panic.
func FuzzValidate(f *testing.F) {
	for _, s := range [][3]string{
		{"0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a", "hi", "t"}, {"", "", ""}, {"zz", "x", "y"},
		{"0A0A0A0A0A0A0A0A0A0A0A0A0A0A0A0A", "\xff", "\x00"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	c := &Carrier{}
	f.Fuzz(func(t *testing.T, target, text, title string) {
		err := c.Validate(&herald.Message{Target: target, Text: text, Params: map[string]string{ParamTitle: title}})
		var inv *herald.InvalidError
		if err != nil && (!errors.As(err, &inv) || inv.Field == "") {
			t.Fatalf("error %v does not name a field", err)
		}
	})
}
