package httpapi

import (
	"bytes"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// render writes the parts of an answer that are the contract: the status,
// the headers users read, the body; ids are replaced by <id>.
func render(rec *httptest.ResponseRecorder, ids ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n", rec.Code)
	for _, h := range []string{"Content-Type", "Location", "WWW-Authenticate", "Allow"} {
		if v := rec.Header().Get(h); v != "" {
			fmt.Fprintf(&b, "%s: %s\n", h, v)
		}
	}
	b.WriteString("\n")
	b.Write(rec.Body.Bytes())
	out := b.Bytes()
	for _, id := range ids {
		out = bytes.ReplaceAll(out, []byte(id), []byte("<id>"))
	}
	return out
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestGoldenAnswers(t *testing.T) {
	f := newFixture(t)

	checkGolden(t, "error_invalid_field", render(
		f.do("POST", "/v1/messages", keyA, `{"route":"hooks","text":"hi","priority":"high"}`)))
	checkGolden(t, "error_unauthorized", render(f.do("GET", "/v1/messages", "", "")))

	rec := f.do("POST", "/v1/messages", keyA, `{"route":"devices","target":"0102030405060708","payload":"AQID",`+
		`"params":{"f_port":"2"},"priority":1,"correlation_id":"order-7","expires_at":"2025-01-03T00:00:00Z"}`)
	id := decode[struct{ ID string }](t, rec).ID
	checkGolden(t, "message_accepted", render(rec, id))

	f.clock.Advance(1500 * time.Millisecond)
	f.run()
	checkGolden(t, "message_delivered", render(f.do("GET", "/v1/messages/"+id, keyA, ""), id))
}
