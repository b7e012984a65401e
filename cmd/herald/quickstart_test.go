package main

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// docBlock is a fenced code block of a Markdown document: its info string
// (yaml, sh) and its text.
type docBlock struct {
	lang, text string
}

// docSection returns the text of the section of the Markdown file path
// under the heading title, up to the next heading of its level or above.
func docSection(t *testing.T, path, title string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	level, fenced := 0, false
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if !fenced && strings.HasPrefix(line, "#") {
			hashes := len(line) - len(strings.TrimLeft(line, "#"))
			if level > 0 && hashes <= level {
				break
			}
			if strings.TrimSpace(line[hashes:]) == title {
				level = hashes
				continue
			}
		}
		if level > 0 {
			out.WriteString(line)
		}
	}
	if level == 0 {
		t.Fatalf("%s has no heading %q", path, title)
	}
	return out.String()
}

// docBlocks returns the fenced code blocks of a section, in order.
func docBlocks(section string) []docBlock {
	var blocks []docBlock
	var cur *docBlock
	for line := range strings.Lines(section) {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &docBlock{lang: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
		case cur != nil && strings.HasPrefix(line, "```"):
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line
		}
	}
	return blocks
}

// TestChirpStackQuickStartAsDocumented runs the ChirpStack quick start of
// docs/CONFIG.md ("Trying it with the simulator") as a reader would: its
// yaml block saved under the name the text gives it, each sh block run by
// sh in a terminal of its own (those that start `herald serve` or
// `herald sim` left running), with `herald` the herald binary. The only
// liberty taken: the documented addresses 127.0.0.1:8080 and :8090 become
// free ports (and HERALD_SERVER names the first, as the CLI's default
// does the documented one). The last block must show the message
// DELIVERY_SUCCESSFUL, as the text promises; the commands after the two
// servers share the third terminal.
func TestChirpStackQuickStartAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	section := docSection(t, filepath.Join("..", "..", "docs", "CONFIG.md"), "Trying it with the simulator")
	const want = "DELIVERY_SUCCESSFUL"
	if !strings.Contains(section, want) {
		t.Fatalf("the quick start no longer promises %s; change this test with it", want)
	}
	blocks := docBlocks(section)
	if len(blocks) < 3 || blocks[0].lang != "yaml" {
		t.Fatalf("the quick start has %d code blocks, want a yaml config then sh commands: %+v", len(blocks), blocks)
	}
	file := regexp.MustCompile("`([^`]+\\.yaml)`").FindStringSubmatch(section)
	if file == nil {
		t.Fatal("the quick start names no file to save its config in")
	}

	dir, bin := t.TempDir(), t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\nHERALD_RUN_MAIN=1 exec '" + self + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "herald"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	heraldAddr, simAddr := freeAddr(t), freeAddr(t)
	ports := strings.NewReplacer("127.0.0.1:8080", heraldAddr, "127.0.0.1:8090", simAddr)
	if err := os.WriteFile(filepath.Join(dir, file[1]), []byte(ports.Replace(blocks[0].text)), 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HERALD_") && !strings.HasPrefix(kv, "CHIRPSTACK_") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "HERALD_SERVER=http://"+heraldAddr)
	terminal := func(script string, out *lockedBuffer) *exec.Cmd {
		cmd := exec.Command("sh", "-e", "-c", ports.Replace(script))
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd
	}

	var logs []*lockedBuffer
	dump := func() string {
		var b strings.Builder
		for i, l := range logs {
			b.WriteString("--- terminal " + string(rune('1'+i)) + ":\n" + l.String())
		}
		return b.String()
	}
	var foreground []string
	for _, b := range blocks[1:] {
		if b.lang != "sh" {
			t.Fatalf("a %q block in the quick start: want sh", b.lang)
		}
		if !strings.Contains(b.text, "herald serve") && !strings.Contains(b.text, "herald sim") {
			foreground = append(foreground, b.text)
			continue
		}
		if len(foreground) > 0 {
			t.Fatal("a long-running command after a command that needs it")
		}
		out := &lockedBuffer{}
		logs = append(logs, out)
		cmd := terminal(b.text, out)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
		})
	}
	if len(logs) != 2 || len(foreground) < 2 {
		t.Fatalf("the quick start runs %d servers and %d other commands, want herald and the simulator, a send and a look", len(logs), len(foreground))
	}

	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + heraldAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		c, derr := net.Dial("tcp", simAddr)
		if derr == nil {
			c.Close()
		}
		if err == nil && resp.StatusCode == http.StatusOK && derr == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("herald or the simulator not up after 60 s:\n%s", dump())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The third terminal: its commands once, then its last one again until
	// it shows what the text promises (a reader looks again).
	last := foreground[len(foreground)-1]
	script := strings.Join(foreground[:len(foreground)-1], "\n") + "\nwhile :; do\n" + last + "\nsleep 0.25\ndone\n"
	out := &lockedBuffer{}
	logs = append(logs, out)
	cmd := terminal(script, out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}()
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), want) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the third terminal's commands failed (%v):\n%s", err, dump())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not %s within 30 s:\n%s", last, want, dump())
		}
	}
}
