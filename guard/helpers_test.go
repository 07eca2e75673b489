package guard_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: a
// watched breaker's timer, a hold's waiter.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// errUnavailable stands for a transient failure, a "503".
var errUnavailable = errors.New("503 service unavailable")

// errBadRequest stands for a failure that retrying cannot fix, a "400".
var errBadRequest = errors.New("400 bad request")

// watchdog bounds how long a test waits for a goroutine it expects to finish
// at once; it is never reached when the code works, so it costs no time.
const watchdog = 10 * time.Second

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(watchdog):
		require.FailNowf(t, "timed out", "waiting for %s", what)
		panic("unreachable")
	}
}

// countOutcomes waits until n calls have reported on sent or refused, and
// returns how many each; it fails t if they take longer than watchdog.
func countOutcomes(t *testing.T, n int, sent, refused <-chan struct{}) (nSent, nRefused int) {
	t.Helper()
	for nSent+nRefused < n {
		select {
		case <-sent:
			nSent++
		case <-refused:
			nRefused++
		case <-time.After(watchdog):
			require.FailNow(t, "timed out", "%d sent, %d refused", nSent, nRefused)
		}
	}
	return nSent, nRefused
}
