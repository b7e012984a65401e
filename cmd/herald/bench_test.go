package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchSQLiteOptions runs a workload on a fresh temporary database
// opened with options only, and refuses an unknown option.
func TestBenchSQLiteOptions(t *testing.T) {
	var out bytes.Buffer
	cmd := rootCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"bench", "--workload", "W5", "--store", "sqlite:?synchronous=normal"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Peer     string `json:"peer"`
		Workload string `json:"workload"`
		N        int    `json:"n"`
		Lost     int    `json:"lost"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	if res.Peer != "herald-sqlite" || res.Workload != "W5" || res.N != 2000 || res.Lost != 0 {
		t.Fatalf("result %+v", res)
	}

	cmd = rootCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"bench", "--workload", "W5", "--store", "sqlite:?synchronous=off"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "synchronous must be full or normal") {
		t.Fatalf("synchronous=off: err = %v, want the option refused", err)
	}
}
