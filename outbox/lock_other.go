//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package outbox

import "os"

// lockFile takes the journal with a lock file, where flock is missing.
func lockFile(_ *os.File, path string) (func() error, error) { return lockByFile(path) }

// lockFileOnly is a no-op here: the lock file guards the compacted file too.
func lockFileOnly(*os.File) (func() error, error) { return func() error { return nil }, nil }

// swapLock keeps the lock file: it guards the journal's name, not a file.
func (j *FileJournal) swapLock(func() error) {}
