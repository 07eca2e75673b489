package redisstore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// client, renewal and connection must end with its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
