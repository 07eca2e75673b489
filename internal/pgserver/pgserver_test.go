package pgserver_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormguard/retry/internal/pgserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// psql runs one statement with the psql beside the server's programs and
// returns its unaligned output.
func psql(t *testing.T, url, sql string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("psql")
	if err != nil {
		matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/psql")
		require.NotEmpty(t, matches, "psql not found")
		bin = matches[0]
	}
	out, err := exec.Command(bin, url, "-XAtqc", sql).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func TestServerAnswersAndSurvivesARestart(t *testing.T) {
	s := pgserver.Start(t)
	url := s.NewDatabase(t)
	other := s.NewDatabase(t)
	assert.NotEqual(t, url, other, "each database is new")

	_, err := psql(t, url, "CREATE TABLE kv (k text PRIMARY KEY, v text); INSERT INTO kv VALUES ('a', 'b')")
	require.NoError(t, err)
	out, err := psql(t, other, "SELECT count(*) FROM pg_tables WHERE tablename = 'kv'")
	require.NoError(t, err, out)
	assert.Equal(t, "0", out, "databases are separate")

	s.Stop()
	_, err = psql(t, url, "SELECT 1")
	require.Error(t, err, "a stopped server refuses connections")
	s.Resume(t)

	s.Restart(t)
	out, err = psql(t, url, "SELECT v FROM kv WHERE k = 'a'")
	require.NoError(t, err, out)
	assert.Equal(t, "b", out, "committed data survives an immediate restart")
}

// A Shared server outlives the tests that use it, and Stop ends it.
func TestSharedServesUntilStop(t *testing.T) {
	sh := pgserver.StartShared()
	s := sh.Server(t)
	url := s.NewDatabase(t)
	out, err := psql(t, url, "SELECT 40 + 2")
	require.NoError(t, err, out)
	assert.Equal(t, "42", out)
	sh.Stop()
	_, err = psql(t, url, "SELECT 1")
	require.Error(t, err, "a stopped server refuses connections")
}
