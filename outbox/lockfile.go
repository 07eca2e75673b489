package outbox

import (
	"errors"
	"fmt"
	"os"
)

// lockByFile takes the journal at path by creating path+".lock"
// exclusively: the lock of systems without flock. Unlike flock, the lock
// file outlives a crash: remove it by hand once sure that no process has
// the journal open.
func lockByFile(path string) (func() error, error) {
	lock := path + ".lock"
	l, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("%w: %s exists (remove it if no process has the journal open)", ErrLocked, lock)
	}
	if err != nil {
		return nil, fmt.Errorf("outbox: lock journal: %w", err)
	}
	if err := l.Close(); err != nil {
		os.Remove(lock)
		return nil, fmt.Errorf("outbox: lock journal: %w", err)
	}
	return func() error { return os.Remove(lock) }, nil
}
