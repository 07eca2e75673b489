package pgstore_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/stormguard/retry/internal/pgserver"
)

// pgShared is the package's one PostgreSQL: every test makes a database of
// its own on it (2 cores do not run a server per test).
var pgShared *pgserver.Shared

// TestMain starts the package's server, runs the tests and fails them if
// any goroutine outlives them: every pool, renewal and connection must end
// with its test. A crash harness's child (see crash_test.go) runs its own
// part instead, and never returns.
func TestMain(m *testing.M) {
	if crashChild() {
		return
	}
	pgShared = pgserver.StartShared()
	code := m.Run()
	pgShared.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// pg returns the package's server, or skips (fails, under CI=true) t
// without one.
func pg(t testing.TB) *pgserver.Server {
	t.Helper()
	return pgShared.Server(t)
}
