//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package outbox

import (
	"errors"
	"fmt"
	"os"
)

// lockFile takes the journal by creating path+".lock" exclusively, where
// flock is missing. Unlike flock, the lock file outlives a crash: remove it
// by hand once sure no process has the journal open.
func lockFile(f *os.File, path string) (func() error, error) {
	lock := path + ".lock"
	l, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("%w: %s exists (remove it if no process has the journal open)", ErrLocked, lock)
	}
	if err != nil {
		return nil, fmt.Errorf("outbox: lock journal: %w", err)
	}
	l.Close()
	return func() error { return os.Remove(lock) }, nil
}

// lockFileOnly is a no-op here: the lock file guards the compacted file too.
func lockFileOnly(*os.File) (func() error, error) { return func() error { return nil }, nil }

// swapLock keeps the lock file: it guards the journal's name, not a file.
func (j *FileJournal) swapLock(func() error) {}
