package chaos_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: an
// injector starts none, and the HTTP tests must close what they open.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
