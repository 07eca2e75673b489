package pgserver

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Shared is one server for a whole test package, started by TestMain so
// that the package's tests share it (each makes a database of its own with
// NewDatabase): a server per test is too slow on a small machine.
type Shared struct {
	s   *Server
	tb  mainTB
	msg string // why s is nil: a skip, or a failure under CI=true
}

// StartShared starts the package's server; call it from TestMain, and Stop
// after m.Run. Without PostgreSQL it records why, and Server skips (or,
// under CI=true, fails) each test that asks for it.
func StartShared() *Shared {
	sh := &Shared{}
	sh.tb.sh = sh
	sh.s = Start(&sh.tb)
	return sh
}

// Server returns the package's server, or skips t (fails it, under
// CI=true) when there is none.
func (sh *Shared) Server(t testing.TB) *Server {
	t.Helper()
	if sh.s == nil {
		if sh.tb.failed {
			t.Fatal(sh.msg)
		}
		t.Skip(sh.msg)
	}
	return sh.s
}

// Stop stops the server and removes its files.
func (sh *Shared) Stop() {
	for i := len(sh.tb.cleanups) - 1; i >= 0; i-- {
		sh.tb.cleanups[i]()
	}
	sh.tb.cleanups = nil
}

// Run is the rest of a TestMain that called StartShared: it runs the
// package's tests, stops the server, and fails the run if any goroutine
// outlives them (every pool, renewal and connection must end with its
// test). It returns the exit code for os.Exit.
func (sh *Shared) Run(m *testing.M) int {
	code := m.Run()
	sh.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}

// mainTB is the testing.TB that StartShared gives Start: the server
// outlives each test, and its Cleanups run at Stop. Start calls only the
// methods below; the embedded nil TB would panic on any other.
type mainTB struct {
	testing.TB
	sh       *Shared
	cleanups []func()
	failed   bool
}

func (*mainTB) Helper()                     {}
func (tb *mainTB) Cleanup(f func())         { tb.cleanups = append(tb.cleanups, f) }
func (*mainTB) Logf(string, ...any)         {}
func (tb *mainTB) Skipf(f string, a ...any) { tb.sh.msg = fmt.Sprintf(f, a...) }
func (tb *mainTB) Fatalf(f string, a ...any) {
	tb.sh.msg, tb.failed = fmt.Sprintf(f, a...), true
}
