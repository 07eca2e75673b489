package redisserver_test

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"testing"

	"github.com/stormguard/retry/internal/redisserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeTB records how Start ends a test instead of ending it.
type fakeTB struct {
	testing.TB
	fatal, skip string
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Fatalf(format string, a ...any) { f.fatal = fmt.Sprintf(format, a...) }
func (f *fakeTB) Skipf(format string, a ...any)  { f.skip = fmt.Sprintf(format, a...) }

func TestMissingServerSkipsOutsideCIAndFailsInCI(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no redis-server there
	for _, tc := range []struct {
		ci         string
		fail, skip bool
	}{
		{"true", true, false},
		{"", false, true},
		{"false", false, true},
		{"1", false, true},
	} {
		t.Setenv("CI", tc.ci)
		f := &fakeTB{TB: t}
		assert.Nil(t, redisserver.Start(f))
		assert.Equal(t, tc.fail, f.fatal != "", "CI=%q: failed: %s", tc.ci, f.fatal)
		assert.Equal(t, tc.skip, f.skip != "", "CI=%q: skipped: %s", tc.ci, f.skip)
		assert.Contains(t, f.skip+f.fatal, "apt-get install redis-server", "CI=%q: the message names the package to install", tc.ci)
	}
}

func TestStartServesAndStops(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		redisserver.Start(t) // skips or fails, by the CI rule
	}
	var addr string
	t.Run("running", func(t *testing.T) {
		s := redisserver.Start(t)
		addr = s.Addr
		c, err := net.Dial("tcp", s.Addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Write([]byte("PING\r\n"))
		require.NoError(t, err)
		line, err := bufio.NewReader(c).ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, "+PONG\r\n", line)
	})
	_, err := net.Dial("tcp", addr)
	assert.Error(t, err, "the server stopped when its test ended")
}
