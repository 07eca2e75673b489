package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a benchmark or test leaves a goroutine behind,
// ours or a peer's: the HTTP rows close their servers and idle connections.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
