package release_test

import (
	"bytes"
	"context"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/internal/tools/release"
)

// TestConsumerFetchesEveryModule is what a new user does, with nothing
// published: it serves the working tree as a module proxy at the version
// the go.mod files require, then, in a fresh module outside the repository
// and with no replace directive, runs go get of every module at that
// version, alone and all together, builds a program that imports every
// public package, and installs the storm simulator with go install
// …@version, which refuses a module with replace directives. Third-party modules come through the proxy the go
// command would use anyway (go env GOPROXY); a require of one of our modules
// at a version that is not being prepared fails here, as it would for a user.
func TestConsumerFetchesEveryModule(t *testing.T) {
	t.Parallel()
	root, err := release.FindRoot(".")
	require.NoError(t, err)
	version, err := release.PreparedVersion(root)
	require.NoError(t, err)

	proxy := t.TempDir()
	require.NoError(t, release.BuildProxy(root, proxy, version))

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	upstream := strings.TrimSpace(goOut(t, ctx, root, nil, "env", "GOPROXY"))
	cache := strings.TrimSpace(goOut(t, ctx, root, nil, "env", "GOMODCACHE"))
	env := []string{
		"GOWORK=off",
		// -modcacherw: the private module cache below can be removed.
		"GOFLAGS=-mod=mod -modcacherw",
		// A module cache of its own, so that the working tree's zips never
		// enter the user's cache under a real version number (where they
		// would shadow the published release, and the next run's tree). The
		// user's cache still serves third-party modules, as a proxy: its
		// cache/download folder has the proxy's layout.
		"GOMODCACHE=" + t.TempDir(),
		"GOPROXY=" + fileURL(proxy) + "," + fileURL(filepath.Join(cache, "cache", "download")) + "," + upstream,
		// The file proxy's zips are not in the checksum database; GOPRIVATE
		// would also skip the proxy and go to the (missing) repository.
		"GONOSUMDB=" + release.Root,
		"GONOPROXY=",
		"GOPRIVATE=",
	}

	mods, err := release.Modules(root)
	require.NoError(t, err)
	var published []release.Module
	for _, m := range mods {
		if m.Published() {
			published = append(published, m)
		}
	}
	require.NotEmpty(t, published)

	// One consumer per module first: a user who wants only retrygrpc gets
	// only retrygrpc, and its requires alone must resolve (fetching all
	// modules together would hide an old require behind a newer one).
	for _, m := range published {
		consume(t, ctx, env, version, []release.Module{m})
	}
	// Then all of them in one build, and each command installed by
	// go install path@version, as the README tells users to.
	dir := consume(t, ctx, env, version, published)
	for _, m := range published {
		if isCommand(m.Dir) {
			goOut(t, ctx, dir, env, "install", "-trimpath", m.Path+"@"+version)
		}
	}
}

// consume makes a fresh module outside the repository that runs go get
// of each of mods at version and builds a program importing all their
// library packages; it returns the module's directory.
func consume(t *testing.T, ctx context.Context, env []string, version string, mods []release.Module) string {
	t.Helper()
	dir := t.TempDir()
	env = append(env[:len(env):len(env)], "GOBIN="+filepath.Join(dir, "bin"))
	goOut(t, ctx, dir, env, "mod", "init", "example.com/consumer")
	var gets, imports []string
	for _, m := range mods {
		gets = append(gets, m.Path+"@"+version)
		pkgs, err := libraryPackages(m)
		require.NoError(t, err)
		imports = append(imports, pkgs...)
	}
	goOut(t, ctx, dir, env, append([]string{"get"}, gets...)...)
	if len(imports) == 0 {
		return dir // a command alone: go install covers it
	}
	var src bytes.Buffer
	src.WriteString("// Command consumer imports the public packages of github.com/stormguard/retry.\npackage main\n\nimport (\n")
	for _, p := range imports {
		src.WriteString("\t_ \"" + p + "\"\n")
	}
	src.WriteString(")\n\nfunc main() {}\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), src.Bytes(), 0o644))
	goOut(t, ctx, dir, env, "build", "-trimpath", "-o", os.DevNull, ".")
	return dir
}

// libraryPackages returns the import paths of the module's importable
// packages: not main, not internal, not testdata, with at least one non-test
// file. It reads package clauses instead of asking go list, so that it
// works even when the module's requirements do not resolve.
func libraryPackages(m release.Module) ([]string, error) {
	var pkgs []string
	err := filepath.WalkDir(m.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(m.Dir, p)
		rel = filepath.ToSlash(rel)
		if p != m.Dir && (fileExists(filepath.Join(p, "go.mod")) || d.Name() == "testdata" || d.Name() == "internal" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir
		}
		names, _ := filepath.Glob(filepath.Join(p, "*.go"))
		for _, n := range names {
			if strings.HasSuffix(n, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), n, nil, parser.PackageClauseOnly)
			if err != nil {
				return err
			}
			if f.Name.Name != "main" {
				pkgs = append(pkgs, strings.TrimSuffix(m.Path+"/"+rel, "/."))
			}
			break
		}
		return nil
	})
	sort.Strings(pkgs)
	return pkgs, err
}

func isCommand(dir string) bool {
	names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), n, nil, parser.PackageClauseOnly)
		return err == nil && f.Name.Name == "main"
	}
	return false
}

func goOut(t *testing.T, ctx context.Context, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "go %s in %s:\n%s%s", strings.Join(args, " "), dir, stdout.String(), stderr.String())
	return stdout.String()
}

func fileURL(dir string) string {
	return "file://" + filepath.ToSlash(dir)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func gitCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	return cmd
}
