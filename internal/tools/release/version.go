package release

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// PreparedVersion returns the version being prepared: the one version at
// which the go.mod files require our own modules. It fails, listing every
// require, when they disagree, since a release tags every module at one
// version and a require of any other would not resolve for a user.
func PreparedVersion(root string) (string, error) {
	mods, err := Modules(root)
	if err != nil {
		return "", err
	}
	seen := map[string][]string{} // version -> "module requires path"
	for _, m := range mods {
		for p, v := range m.Requires {
			seen[v] = append(seen[v], fmt.Sprintf("%s requires %s %s", rel(root, m.Dir), p, v))
		}
	}
	if len(seen) == 0 {
		return "", errors.New("no go.mod requires one of our own modules: no version to prepare")
	}
	if len(seen) > 1 {
		var lines []string
		for _, l := range seen {
			lines = append(lines, l...)
		}
		sort.Strings(lines)
		return "", fmt.Errorf("the go.mod files require our modules at %d versions, want one:\n\t%s", len(seen), strings.Join(lines, "\n\t"))
	}
	for v := range seen {
		if !semver.IsValid(v) || semver.Canonical(v) != v || semver.Build(v) != "" {
			return "", fmt.Errorf("our modules are required at %s, which is not a release version such as v0.1.0", v)
		}
		return v, nil
	}
	panic("unreachable")
}

// Tags returns the git tags that release version: one per published module,
// "v0.1.0" for the root module and "retrygrpc/v0.1.0" for the one in
// retrygrpc (https://go.dev/ref/mod#vcs-version).
func Tags(root, version string) ([]string, error) {
	mods, err := Modules(root)
	if err != nil {
		return nil, err
	}
	var tags []string
	for _, m := range mods {
		if m.Published() {
			tags = append(tags, m.TagPrefix()+version)
		}
	}
	return tags, nil
}

// Check returns every way in which the repository at root is not ready to
// release its prepared version, or nil:
//   - the go.mod files require our own modules at one version;
//   - no published go.mod has a replace directive (go install pkg@version
//     refuses one, and a consumer's build ignores it anyway);
//   - go.work uses every module, and replaces each of our required modules
//     at that version (and only at it) by its directory, so that local
//     development sees the working tree;
//   - CHANGELOG.md has a section for that version.
func Check(root string) error {
	var errs []error
	version, err := PreparedVersion(root)
	if err != nil {
		return err
	}
	mods, err := Modules(root)
	if err != nil {
		return err
	}
	byPath := map[string]Module{}
	for _, m := range mods {
		byPath[m.Path] = m
		b, err := os.ReadFile(filepath.Join(m.Dir, "go.mod"))
		if err != nil {
			return err
		}
		f, err := modfile.Parse("go.mod", b, nil)
		if err != nil {
			return err
		}
		if m.Published() && len(f.Replace) > 0 {
			errs = append(errs, fmt.Errorf("%s/go.mod has a replace directive (%s); use go.work for local development", rel(root, m.Dir), f.Replace[0].Old.Path))
		}
		for p := range m.Requires {
			if _, ok := find(mods, p); !ok {
				errs = append(errs, fmt.Errorf("%s/go.mod requires %s, which is no module of this repository", rel(root, m.Dir), p))
			}
		}
	}

	work, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	wf, err := modfile.ParseWork("go.work", work, nil)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	used := map[string]bool{}
	for _, u := range wf.Use {
		used[filepath.Clean(filepath.Join(root, filepath.FromSlash(u.Path)))] = true
	}
	for _, m := range mods {
		if !used[m.Dir] {
			errs = append(errs, fmt.Errorf("go.work does not use ./%s: run go work use ./%[1]s", rel(root, m.Dir)))
		}
	}
	required := map[string]bool{}
	for _, m := range mods {
		for p := range m.Requires {
			required[p] = true
		}
	}
	replaced := map[string]bool{}
	for _, r := range wf.Replace {
		m, ours := byPath[r.Old.Path]
		switch {
		case !ours:
			errs = append(errs, fmt.Errorf("go.work replaces %s, which is no module of this repository", r.Old.Path))
		case r.Old.Version != version:
			errs = append(errs, fmt.Errorf("go.work replaces %s at %q, want at %s, the version being prepared", r.Old.Path, r.Old.Version, version))
		case filepath.Clean(filepath.Join(root, filepath.FromSlash(r.New.Path))) != m.Dir:
			errs = append(errs, fmt.Errorf("go.work replaces %s by %s, want ./%s", r.Old.Path, r.New.Path, rel(root, m.Dir)))
		default:
			replaced[r.Old.Path] = true
		}
	}
	for p := range required {
		if m, ok := byPath[p]; ok && !replaced[p] {
			errs = append(errs, fmt.Errorf("go.work does not replace %s %s: run go work edit -replace=%[1]s@%[2]s=./%s", p, version, rel(root, m.Dir)))
		}
	}

	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		errs = append(errs, err)
	} else if !regexp.MustCompile(`(?m)^## \[` + regexp.QuoteMeta(strings.TrimPrefix(version, "v")) + `\]`).Match(changelog) {
		errs = append(errs, fmt.Errorf("CHANGELOG.md has no section \"## [%s]\" for the version being prepared", strings.TrimPrefix(version, "v")))
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

func find(mods []Module, path string) (Module, bool) {
	for _, m := range mods {
		if m.Path == path {
			return m, true
		}
	}
	return Module{}, false
}

func rel(root, dir string) string {
	r, err := filepath.Rel(root, dir)
	if err != nil {
		return dir
	}
	return filepath.ToSlash(r)
}
