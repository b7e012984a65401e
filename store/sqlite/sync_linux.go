package sqlite

import (
	"os"
	"syscall"
)

// syncData flushes f's data, and the metadata needed to read it back, to
// stable storage: fdatasync, which skips the timestamps fsync writes too.
func syncData(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
