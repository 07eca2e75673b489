//go:build !linux

package pgjournal_test

func crashChild() bool { return false }
