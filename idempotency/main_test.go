package idempotency_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// lease renewal, timer and connection must end with its request.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
