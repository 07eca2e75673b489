package guard_test

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// cpuTimer reports, beside ns/op, the CPU time the benchmark's own thread
// spent per op (cpu-ns/op): on a machine shared with other work, ns/op
// counts the time the thread waited for a core too, and this does not.
type cpuTimer struct{ start time.Duration }

func startCPU(b *testing.B) *cpuTimer {
	b.Helper()
	runtime.LockOSThread()
	return &cpuTimer{start: threadCPU()}
}

func (c *cpuTimer) stop(b *testing.B) {
	b.Helper()
	d := threadCPU() - c.start
	runtime.UnlockOSThread()
	b.ReportMetric(float64(d)/float64(b.N), "cpu-ns/op")
}

// threadCPU is the calling thread's user and system time.
func threadCPU() time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
