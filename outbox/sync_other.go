//go:build !linux

package outbox

import "os"

// syncData makes what was written to f durable (F_FULLFSYNC on macOS).
func syncData(f *os.File) error { return f.Sync() }

// preallocate reserves nothing here: the journal appends, and each sync
// flushes the file's new size with its data.
func preallocate(*os.File, int64, int64) (bool, error) { return false, nil }
