package retry_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// wait, deadline and attempt timeout of Do must clean up after itself.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
