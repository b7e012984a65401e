//go:build cgo

package sqlite

import (
	"errors"
	"syscall"

	"github.com/mattn/go-sqlite3"
)

// full reports whether err says the disk is full: SQLITE_FULL, or an I/O
// error of SQLite or of the WAL's sync with ENOSPC.
func full(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrFull || se.SystemErrno == syscall.ENOSPC) {
		return true
	}
	return errors.Is(err, syscall.ENOSPC)
}
