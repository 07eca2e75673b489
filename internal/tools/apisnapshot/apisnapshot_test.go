package apisnapshot_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/internal/tools/apisnapshot"
	"github.com/stormguard/retry/internal/tools/release"
)

// TestAPISnapshotIsCurrent fails on an exported change that api/*.txt does
// not record. If the change is meant, run
// go run ./internal/tools/cmd/apisnapshot -update and list it in
// CHANGELOG.md.
func TestAPISnapshotIsCurrent(t *testing.T) {
	t.Parallel()
	root, err := release.FindRoot(".")
	require.NoError(t, err)
	snap, err := apisnapshot.Generate(root)
	require.NoError(t, err)
	require.Contains(t, snap, "retry.txt")
	diffs, err := apisnapshot.Diff(root, snap)
	require.NoError(t, err)
	assert.Empty(t, diffs, "the exported API differs from api/ (- recorded, + in the code); if meant, run go run ./internal/tools/cmd/apisnapshot -update and add the change to CHANGELOG.md:\n%s", strings.Join(diffs, "\n"))
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
}

// A change to an exported signature shows up as a removed and an added line;
// an unexported change, a renamed parameter and an internal package do not.
func TestDiffSeesExportedChangesOnly(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"go.mod":              "module github.com/stormguard/retry\n\ngo 1.25\n",
		"retry.go":            "package retry\n\n// Policy is a policy.\ntype Policy struct {\n\tMax int\n\tmin int\n}\n\n// Do does.\nfunc Do(n int, opts ...string) (bool, error) { return false, nil }\n\nfunc (p *Policy) Reset() {}\n\nfunc (p Policy) String() string { return \"\" }\n\nfunc helper() {}\n",
		"internal/x/x.go":     "package x\n\nfunc X() {}\n",
		"cmd/tool/main.go":    "package main\n\nfunc Exported() {}\n\nfunc main() {}\n",
		"sub/sub.go":          "package sub\n\nconst Limit = 3\n\nvar ErrX error\n\ntype Getter interface{ Get(key string) (int, bool) }\n",
		"sub/sub_test.go":     "package sub\n\nfunc TestOnly() {}\n",
		"internal/y/y_doc.go": "// Package y is internal.\npackage y\n",
	})
	snap, err := apisnapshot.Generate(root)
	require.NoError(t, err)
	got := string(snap["retry.txt"])
	for _, want := range []string{
		"pkg github.com/stormguard/retry, func Do(int, ...string) (bool, error)",
		"pkg github.com/stormguard/retry, type Policy struct, Max int",
		"pkg github.com/stormguard/retry, method (*Policy) Reset()",
		"pkg github.com/stormguard/retry, method (Policy) String() string",
		"pkg github.com/stormguard/retry/sub, const Limit untyped int = 3",
		"pkg github.com/stormguard/retry/sub, var ErrX error",
		"pkg github.com/stormguard/retry/sub, type Getter interface, Get(string) (int, bool)",
	} {
		assert.Contains(t, got, want+"\n")
	}
	for _, not := range []string{"min", "helper", "internal", "Exported", "TestOnly"} {
		assert.NotContains(t, got, not)
	}
	require.NoError(t, apisnapshot.Write(root, snap))
	diffs, err := apisnapshot.Diff(root, snap)
	require.NoError(t, err)
	assert.Empty(t, diffs)

	// Unexported and cosmetic changes: still no diff.
	writeFiles(t, root, map[string]string{"retry.go": "package retry\n\ntype Policy struct {\n\tMax int\n\tminimum int64\n}\n\nfunc Do(attempts int, options ...string) (ok bool, err error) { return false, nil }\n\nfunc (p *Policy) Reset() {}\n\nfunc (p Policy) String() string { return \"\" }\n\nfunc other() {}\n"})
	snap, err = apisnapshot.Generate(root)
	require.NoError(t, err)
	diffs, err = apisnapshot.Diff(root, snap)
	require.NoError(t, err)
	assert.Empty(t, diffs)

	// An exported change: a diff of the two lines.
	writeFiles(t, root, map[string]string{"retry.go": "package retry\n\ntype Policy struct {\n\tMax int\n}\n\nfunc Do(n int64, opts ...string) (bool, error) { return false, nil }\n\nfunc (p *Policy) Reset() {}\n\nfunc (p Policy) String() string { return \"\" }\n"})
	snap, err = apisnapshot.Generate(root)
	require.NoError(t, err)
	diffs, err = apisnapshot.Diff(root, snap)
	require.NoError(t, err)
	require.Len(t, diffs, 1)
	assert.Equal(t, "api/retry.txt:\n-pkg github.com/stormguard/retry, func Do(int, ...string) (bool, error)\n+pkg github.com/stormguard/retry, func Do(int64, ...string) (bool, error)", diffs[0])
}
