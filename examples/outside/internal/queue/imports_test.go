package queue_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The point of this module is that it needs nothing internal to the
// library. Go's rule does not enforce it here: the module's path lies
// under github.com/stormguard/retry, whose internal packages it could
// import. So this test does, for every file of the module.
func TestImportsOnlyExportedAPI(t *testing.T) {
	t.Parallel()
	const internal = "github.com/stormguard/retry/internal"
	root := filepath.Join("..", "..") // the module's root
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			assert.False(t, p == internal || strings.HasPrefix(p, internal+"/"), "%s imports %s", path, p)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, files, 5, "the module's files were found")
}
