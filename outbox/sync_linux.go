package outbox

import (
	"os"
	"syscall"
)

// syncData makes what was written to f durable. On Linux fdatasync is
// enough for an append: it flushes the data and the file size, which a
// later read needs, and skips timestamps, which it does not.
func syncData(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
