// Package release holds the checks that stand between the repository and a
// release: every module found, the versions of our own modules that each
// go.mod requires agreeing with one another and with go.work, and a module
// proxy built from the working tree, so that a consumer can fetch every
// module at the version being prepared with nothing published yet.
package release

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
)

// Root is the module path of the core module; every module of the
// repository has a path under it.
const Root = "github.com/stormguard/retry"

// Module is one module of the repository.
type Module struct {
	Path string // module path, e.g. github.com/stormguard/retry/retrygrpc
	Dir  string // absolute directory holding its go.mod
	// Requires lists the versions of our own modules that its go.mod
	// requires, by module path.
	Requires map[string]string
}

// Published reports whether the module is released (tagged and served by the
// proxy). Modules under an internal directory hold the repository's own
// tools and are never tagged.
func (m Module) Published() bool {
	return !strings.Contains(m.Path+"/", "/internal/")
}

// TagPrefix returns the prefix of the module's release tags: "" for the
// module at the repository root, "retrygrpc/" for the one in retrygrpc, as
// https://go.dev/ref/mod#vcs-version requires for a module in a subdirectory.
func (m Module) TagPrefix() string {
	if m.Path == Root {
		return ""
	}
	return strings.TrimPrefix(m.Path, Root+"/") + "/"
}

// FindRoot returns the repository root: the nearest directory at or above dir
// whose go.mod declares [Root].
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modfile.ModulePath(b) == Root {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod for %s at or above the current directory", Root)
		}
		dir = parent
	}
}

// Modules returns every module of the repository at root, found by walking
// the tree for go.mod files (not by reading go.work, so that a module
// missing from go.work is still found), sorted by path.
func Modules(root string) ([]Module, error) {
	var mods []Module
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || (strings.HasPrefix(d.Name(), ".") && p != root)) {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := modfile.Parse(p, b, nil)
		if err != nil {
			return err
		}
		if f.Module == nil {
			return fmt.Errorf("%s: no module line", p)
		}
		m := Module{Path: f.Module.Mod.Path, Dir: filepath.Dir(p), Requires: map[string]string{}}
		for _, r := range f.Require {
			if r.Mod.Path == Root || strings.HasPrefix(r.Mod.Path, Root+"/") {
				m.Requires[r.Mod.Path] = r.Mod.Version
			}
		}
		mods = append(mods, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := 1; i < len(mods); i++ {
		for j := i; j > 0 && mods[j].Path < mods[j-1].Path; j-- {
			mods[j], mods[j-1] = mods[j-1], mods[j]
		}
	}
	return mods, nil
}
