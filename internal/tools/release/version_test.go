package release_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/internal/tools/release"
)

// TestRepositoryIsReadyToRelease runs the release check on this repository:
// every require of our own modules at one version, no replace in a go.mod,
// go.work using every module, and a CHANGELOG.md section for the version.
func TestRepositoryIsReadyToRelease(t *testing.T) {
	t.Parallel()
	root, err := release.FindRoot(".")
	require.NoError(t, err)
	require.NoError(t, release.Check(root))
	v, err := release.PreparedVersion(root)
	require.NoError(t, err)
	tags, err := release.Tags(root, v)
	require.NoError(t, err)
	assert.Contains(t, tags, v)
	assert.Contains(t, tags, "retrygrpc/"+v)
	assert.NotContains(t, tags, "internal/tools/"+v, "the tools module is never released")
}

// repo writes a small repository: a core module, a nested one requiring it,
// a go.work and a changelog, each overridable.
func repo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	base := map[string]string{
		"go.mod":        "module github.com/stormguard/retry\n\ngo 1.25\n",
		"a/go.mod":      "module github.com/stormguard/retry/a\n\ngo 1.25\n\nrequire github.com/stormguard/retry v0.2.0\n",
		"b/go.mod":      "module github.com/stormguard/retry/b\n\ngo 1.25\n\nrequire github.com/stormguard/retry v0.2.0\n",
		"go.work":       "go 1.26.0\n\nuse (\n\t.\n\t./a\n\t./b\n)\n\nreplace github.com/stormguard/retry v0.2.0 => .\n",
		"CHANGELOG.md":  "# Changelog\n\n## [Unreleased]\n\n## [0.2.0] - 2026-12-01\n",
		"internal/x.go": "package internal\n",
	}
	for name, text := range files {
		base[name] = text
	}
	for name, text := range base {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		if text != "" {
			require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		}
	}
	return root
}

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		want  []string // substrings of the error; none means ready
	}{
		{name: "ready"},
		{
			name:  "requires disagree",
			files: map[string]string{"b/go.mod": "module github.com/stormguard/retry/b\n\ngo 1.25\n\nrequire github.com/stormguard/retry v0.1.9\n"},
			want:  []string{"at 2 versions", "b requires github.com/stormguard/retry v0.1.9", "a requires github.com/stormguard/retry v0.2.0"},
		},
		{
			name:  "replace in a go.mod",
			files: map[string]string{"b/go.mod": "module github.com/stormguard/retry/b\n\ngo 1.25\n\nrequire github.com/stormguard/retry v0.2.0\n\nreplace github.com/stormguard/retry => ../\n"},
			want:  []string{"b/go.mod has a replace directive"},
		},
		{
			name:  "module missing from go.work",
			files: map[string]string{"go.work": "go 1.26.0\n\nuse (\n\t.\n\t./a\n)\n\nreplace github.com/stormguard/retry v0.2.0 => .\n"},
			want:  []string{"go.work does not use ./b"},
		},
		{
			name:  "go.work replaces the old version",
			files: map[string]string{"go.work": "go 1.26.0\n\nuse (\n\t.\n\t./a\n\t./b\n)\n\nreplace github.com/stormguard/retry v0.1.0 => .\n"},
			want:  []string{`replaces github.com/stormguard/retry at "v0.1.0", want at v0.2.0`, "go.work does not replace github.com/stormguard/retry v0.2.0"},
		},
		{
			name:  "no changelog section",
			files: map[string]string{"CHANGELOG.md": "# Changelog\n\n## [Unreleased]\n\n## [0.1.0] - 2026-11-01\n"},
			want:  []string{`CHANGELOG.md has no section "## [0.2.0]"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := release.Check(repo(t, tc.files))
			if len(tc.want) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// The proxy refuses what the real one would: a reserved file name on
// Windows makes the whole module unpublishable.
func TestBuildProxyRefusesReservedNames(t *testing.T) {
	t.Parallel()
	root := repo(t, map[string]string{"testdata/fuzz/FuzzX/nul": "go test fuzz v1\n"})
	gitInit(t, root)
	err := release.BuildProxy(root, t.TempDir(), "v0.2.0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"nul" disallowed`)
}

func TestBuildProxyLayout(t *testing.T) {
	t.Parallel()
	root := repo(t, map[string]string{"retry.go": "package retry\n", "a/a.go": "package a\n", "ignored.bin": "x", ".gitignore": "*.bin\n"})
	gitInit(t, root)
	dir := t.TempDir()
	require.NoError(t, release.BuildProxy(root, dir, "v0.2.0"))
	for _, p := range []string{"github.com/stormguard/retry/@v/v0.2.0.zip", "github.com/stormguard/retry/a/@v/v0.2.0.mod", "github.com/stormguard/retry/b/@v/list"} {
		assert.FileExists(t, filepath.Join(dir, p))
	}
	list, err := os.ReadFile(filepath.Join(dir, "github.com/stormguard/retry/@v/list"))
	require.NoError(t, err)
	assert.Equal(t, "v0.2.0\n", string(list))
	assert.Error(t, release.BuildProxy(root, dir, "0.2"), "a version that is not semver")
}

func gitInit(t *testing.T, dir string) {
	t.Helper()
	out, err := gitCmd(dir, "init", "-q").CombinedOutput()
	require.NoError(t, err, "%s", out)
}
