//go:build !linux

package pgstore_test

// crashChild is false where the crash harness does not run: it needs
// SIGKILL and an inherited listening socket, which it tests on Linux.
func crashChild() bool { return false }
