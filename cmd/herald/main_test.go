package main

import (
	"os"
	"testing"
)

// TestMain lets the test binary stand in for the herald binary: with
// HERALD_RUN_MAIN=1 it runs main, so process tests can start and kill a real
// `herald serve` without building it first.
func TestMain(m *testing.M) {
	if os.Getenv("HERALD_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
