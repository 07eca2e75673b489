//go:build !linux

package outbox_test

// crashChild is false where the crash harness does not run: it needs
// SIGKILL and flock, which it tests on Linux.
func crashChild() bool { return false }
