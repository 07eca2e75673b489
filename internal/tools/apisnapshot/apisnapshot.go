// Package apisnapshot writes down the exported API of every published module
// of this repository, one line per exported name with its type, in the
// manner of the Go project's api/*.txt files:
//
//	pkg github.com/stormguard/retry, func Do(context.Context, func(context.Context) error, Policy) (Trace, error)
//	pkg github.com/stormguard/retry, type Policy struct, MaxAttempts int
//	pkg github.com/stormguard/retry, method (*Budget) Allow() bool
//
// The snapshot of module M lives in api/<M's directory, with / as _>.txt
// (api/retry.txt for the core module). A check compares it with the code, so
// that an exported change cannot land unnoticed: the snapshot's diff is the
// review of it, and the change goes in CHANGELOG.md.
package apisnapshot

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/stormguard/retry/internal/tools/release"
)

// Dir is the snapshot folder, relative to the repository root.
const Dir = "api"

// Generate returns the snapshot of every published module with an exported
// API, by file name under [Dir]. It loads the packages with the go command
// in the workspace at root, so every module is seen at its working tree.
func Generate(root string) (map[string][]byte, error) {
	mods, err := release.Modules(root)
	if err != nil {
		return nil, err
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedTypes | packages.NeedModule | packages.NeedFiles,
		Dir:  root,
		Env:  append(os.Environ(), "GOFLAGS=-mod=readonly"),
	}
	pkgs, err := packages.Load(cfg, release.Root+"/...")
	if err != nil {
		return nil, err
	}
	published := map[string]bool{}
	for _, m := range mods {
		published[m.Path] = m.Published()
	}
	lines := map[string][]string{} // module path -> lines
	var errs []string
	for _, p := range pkgs {
		for _, e := range p.Errors {
			errs = append(errs, e.Error())
		}
		if p.Module == nil || !published[p.Module.Path] || p.Name == "main" || isInternal(p.PkgPath) || p.Types == nil {
			continue
		}
		lines[p.Module.Path] = append(lines[p.Module.Path], packageLines(p.Types)...)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("loading packages:\n\t%s", strings.Join(errs, "\n\t"))
	}
	out := map[string][]byte{}
	for mod, ls := range lines {
		if len(ls) == 0 {
			continue
		}
		sort.Strings(ls)
		out[FileName(mod)] = []byte(strings.Join(ls, "\n") + "\n")
	}
	return out, nil
}

// FileName returns the snapshot file of the module at path.
func FileName(path string) string {
	if path == release.Root {
		return "retry.txt"
	}
	return strings.ReplaceAll(strings.TrimPrefix(path, release.Root+"/"), "/", "_") + ".txt"
}

// Diff compares the snapshot in root's [Dir] with want and returns one
// message per file that differs, with the lines added and removed.
func Diff(root string, want map[string][]byte) ([]string, error) {
	have := map[string][]byte{}
	names, err := filepath.Glob(filepath.Join(root, Dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		have[filepath.Base(n)] = b
	}
	var all []string
	for n := range have {
		all = append(all, n)
	}
	for n := range want {
		if _, ok := have[n]; !ok {
			all = append(all, n)
		}
	}
	sort.Strings(all)
	var diffs []string
	for _, n := range all {
		if bytes.Equal(have[n], want[n]) {
			continue
		}
		added, removed := lineDiff(have[n], want[n])
		var b strings.Builder
		fmt.Fprintf(&b, "%s/%s:", Dir, n)
		for _, l := range removed {
			b.WriteString("\n-" + l)
		}
		for _, l := range added {
			b.WriteString("\n+" + l)
		}
		diffs = append(diffs, b.String())
	}
	return diffs, nil
}

// Write replaces the snapshot in root's [Dir] with snap.
func Write(root string, snap map[string][]byte) error {
	dir := filepath.Join(root, Dir)
	old, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return err
	}
	for _, n := range old {
		if _, keep := snap[filepath.Base(n)]; !keep {
			if err := os.Remove(n); err != nil {
				return err
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for n, b := range snap {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func lineDiff(have, want []byte) (added, removed []string) {
	h, w := set(have), set(want)
	for l := range w {
		if !h[l] {
			added = append(added, l)
		}
	}
	for l := range h {
		if !w[l] {
			removed = append(removed, l)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	return added, removed
}

func set(b []byte) map[string]bool {
	s := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			s[l] = true
		}
	}
	return s
}

func isInternal(path string) bool {
	return strings.HasSuffix(path, "/internal") || strings.Contains(path+"/", "/internal/")
}
