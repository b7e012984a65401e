//go:build !cgo

package sqlite

import (
	"errors"
	"syscall"
)

// full reports whether err says the disk is full (ENOSPC).
func full(err error) bool { return errors.Is(err, syscall.ENOSPC) }
