package pgjournal_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/stormguard/retry/internal/pgserver"
)

// pgServer is the package's one PostgreSQL: every test makes a database of
// its own on it (2 cores do not run a server per test).
var pgServer *pgserver.Server

// serverProblem is why pgServer is nil: a skip, or a failure under CI=true.
var serverProblem struct {
	msg  string
	fail bool
}

func TestMain(m *testing.M) {
	if crashChild() {
		return
	}
	tb := &mainTB{}
	pgServer = pgserver.Start(tb)
	code := m.Run()
	for i := len(tb.cleanups) - 1; i >= 0; i-- {
		tb.cleanups[i]()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// mainTB is the testing.TB that TestMain gives pgserver.Start: the pgServer
// outlives each test, and its Cleanups run after them all. Start calls
// only the methods below; the embedded nil TB would panic on any other.
type mainTB struct {
	testing.TB
	cleanups []func()
}

func (*mainTB) Helper()                  {}
func (tb *mainTB) Cleanup(f func())      { tb.cleanups = append(tb.cleanups, f) }
func (*mainTB) Logf(string, ...any)      {}
func (*mainTB) Skipf(f string, a ...any) { serverProblem.msg = fmt.Sprintf(f, a...) }
func (*mainTB) Fatalf(f string, a ...any) {
	serverProblem.msg, serverProblem.fail = fmt.Sprintf(f, a...), true
}

// pg returns the package's pgServer, or skips (fails, under CI=true) t
// without one.
func pg(t testing.TB) *pgserver.Server {
	t.Helper()
	if pgServer == nil {
		if serverProblem.fail {
			t.Fatal(serverProblem.msg)
		}
		t.Skip(serverProblem.msg)
	}
	return pgServer
}
