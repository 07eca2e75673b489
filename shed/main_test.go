package shed_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: a
// queued request's wait, a handler.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
