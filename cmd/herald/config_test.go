package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// envName is a variable that a config's *_env key names.
var envName = regexp.MustCompile(`_env:\s*([A-Z][A-Z0-9_]*)`)

// TestExamplesPassConfigCheck: every example config under examples/
// passes herald config check, once the variables it names are set.
func TestExamplesPassConfigCheck(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("examples: %v, %v; want every carrier's", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range envName.FindAllStringSubmatch(string(data), -1) {
				t.Setenv(m[1], "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
			}
			var out bytes.Buffer
			if err := checkConfig(file, &out); err != nil {
				t.Fatalf("config check: %v", err)
			}
			if !strings.Contains(out.String(), ": ok (") {
				t.Errorf("config check printed %q, want ok", out.String())
			}
		})
	}
}

// TestConfigCheckReportsEachProblem: herald config check exits non-zero
// with each problem of a bad config on a line of its own, naming its key,
// and refuses a config that gives no API key, saying how to add one.
func TestConfigCheckReportsEachProblem(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(`api_keys: [{key_env: HERALD_CHECK_UNSET, tenant: t}]
concurrency: -1
routes:
  - {name: hooks, carrier: webhook, url: "ftp://x"}
  - {name: hooks, carrier: pigeon}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := rootCommand()
	cmd.SetArgs([]string{"config", "check", "--config", bad})
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "is not valid") {
		t.Fatalf("config check of a bad file: %v, want an error", err)
	}
	for _, want := range []string{"HERALD_CHECK_UNSET is not set", "concurrency -1 is negative", `routes[0] "hooks": url`, `routes[1] "hooks": duplicate route name`, `unknown carrier "pigeon"`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if n := strings.Count(strings.TrimSpace(stderr.String()), "\n") + 1; n < 5 {
		t.Errorf("stderr has %d lines, want one per problem (5):\n%s", n, stderr.String())
	}

	nokeys := filepath.Join(dir, "nokeys.yaml")
	if err := os.WriteFile(nokeys, []byte("routes:\n  - {name: hooks, carrier: webhook, url: \"http://127.0.0.1:9/in\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkConfig(nokeys, &stdout); err == nil || !strings.Contains(err.Error(), "api_keys: none is configured") || !strings.Contains(err.Error(), "key_env: HERALD_API_KEY") {
		t.Errorf("config check of a config without keys: %v, want a refusal saying how to add one", err)
	}
}

// TestVersion: herald version and herald --version print one line naming
// the Go toolchain and the platform.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out bytes.Buffer
		cmd := rootCommand()
		cmd.SetArgs(args)
		cmd.SetOut(&out)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if line := out.String(); !strings.HasPrefix(line, "herald ") || !strings.Contains(line, " go1.") || strings.Count(line, "\n") != 1 {
			t.Errorf("herald %v printed %q, want one line: herald <version> ... go1.x os/arch", args, line)
		}
	}
}

// TestDockerfileBuilds builds the Dockerfile where a Docker engine runs
// (skipped otherwise, saying so), and checks the image's herald prints its
// version.
func TestDockerfileBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skipf("no Docker engine here (docker info: %v)", err)
	}
	tag := "herald-test:" + strings.ToLower(t.Name())
	build := exec.Command("docker", "build", "--build-arg", "VERSION=v0.0.0-test", "-t", tag, "../..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	defer exec.Command("docker", "rmi", tag).Run()
	out, err := exec.Command("docker", "run", "--rm", tag, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "herald v0.0.0-test") {
		t.Fatalf("herald version in the image: %q, %v", out, err)
	}
}
