//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDatabase takes the lock that makes this Store the only one writing
// the database at path, across processes: a file beside it, path-lock,
// locked with flock(2), which the kernel releases when the process ends,
// however it ends. The writer keeps state of its own in memory (kept.go),
// which a second writer would not see. Closing the file releases it. The
// path is made absolute and its symbolic links followed, so that two
// names of one database take one lock.
func lockDatabase(path string) (*os.File, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	} else if dir, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil { // not made yet
		path = filepath.Join(dir, filepath.Base(path))
	}
	f, err := os.OpenFile(path+"-lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is in use by another herald process (or another open store): one writes it at a time", path)
		}
		return nil, err
	}
	return f, nil
}
