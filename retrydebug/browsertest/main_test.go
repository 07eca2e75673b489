package browsertest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the tests if any goroutine outlives them: the browser and
// chromedp's readers must be gone when each test ends.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
