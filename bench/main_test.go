package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a benchmark or test leaves a goroutine behind,
// ours or a peer's: the HTTP rows close their servers and idle connections.
// It removes what the scale benchmarks wrote once for the run (see
// ScaleDir).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { _ = os.RemoveAll(ScaleDir()) }))
}

// ScaleDir is where the scale benchmarks keep the journals they prepare
// once per run (the 10⁶-op one takes seconds to write), apart from any
// other run's.
func ScaleDir() string {
	return filepath.Join(os.TempDir(), "stormguard-bench-scale-"+strconv.Itoa(os.Getpid()))
}
