package config

import (
	"os"
	"testing"
)

// FuzzParse feeds the config loader any file: it must not panic; a file
// it accepts validates, and its routes' policies build.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/carriers.yaml", "testdata/contract.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("routes: [{name: a, carrier: webhook, url: http://x/}]"))
	f.Add([]byte("routes: [{name: a, carrier: webhook, url: http://x/, admission: {rate: 5/s, spacing: -1s}}]"))
	f.Add([]byte("store: redis://\nroutes: 7"))
	f.Add([]byte("{{{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		for _, r := range file.Routes {
			_, _ = r.Policy()
		}
	})
}
