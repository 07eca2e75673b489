//go:build !linux

package outbox

import "os"

// syncData makes what was written to f durable (F_FULLFSYNC on macOS).
func syncData(f *os.File) error { return f.Sync() }
