package pgstore_test

import (
	"os"
	"testing"

	"github.com/stormguard/retry/internal/pgserver"
)

// pgShared is the package's one PostgreSQL: every test makes a database of
// its own on it (2 cores do not run a server per test).
var pgShared *pgserver.Shared

// TestMain starts the package's server and runs the tests (failing them
// if any goroutine outlives them). A crash harness's child (see
// crash_test.go) runs its own part instead, and never returns.
func TestMain(m *testing.M) {
	if crashChild() {
		return
	}
	pgShared = pgserver.StartShared()
	os.Exit(pgShared.Run(m))
}

// pg returns the package's server, or skips (fails, under CI=true) t
// without one.
func pg(t testing.TB) *pgserver.Server {
	t.Helper()
	return pgShared.Server(t)
}
