//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package outbox

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f. flock locks belong to an open
// file, so a second OpenFile in the same process fails as one in another
// process does; the kernel drops the lock when the process dies.
func lockFile(f *os.File, path string) (func() error, error) {
	unlock, err := lockFileOnly(f)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, fmt.Errorf("%w: %s is locked by another FileJournal", ErrLocked, path)
	}
	return unlock, err
}

func lockFileOnly(f *os.File) (func() error, error) {
	fd := int(f.Fd())
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("outbox: lock journal: %w", err)
		}
		// Closing the file releases the lock.
		return func() error { return nil }, nil
	}
}

// swapLock keeps the lock of the compacted file: with flock, the lock
// moves with the file, and the old one's ends when it is closed.
func (j *FileJournal) swapLock(func() error) {}
