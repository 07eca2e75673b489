package retry_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SECURITY.md names the test that checks each promise: each name it gives
// must be a test of this module, or the document has drifted from the code.
func TestSecurityDocNamesRealTests(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("SECURITY.md")
	require.NoError(t, err)
	names := regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, names)

	var sources strings.Builder
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && fileExists(filepath.Join(path, "go.mod")) {
			return filepath.SkipDir // another module
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources.Write(b)
		}
		return nil
	})
	require.NoError(t, err)
	for _, m := range names {
		assert.Contains(t, sources.String(), "func "+m[1]+"(", "SECURITY.md names %s, which no test of this module defines", m[1])
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
