//go:build !linux

package guard_test

import "testing"

// cpuTimer reports nothing where the thread's CPU time is not read.
type cpuTimer struct{}

func startCPU(*testing.B) *cpuTimer { return &cpuTimer{} }
func (*cpuTimer) stop(*testing.B)   {}
