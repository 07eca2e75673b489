package release

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

// BuildProxy writes a module proxy for the published modules at root, each at
// version, into dir, in the layout the go command reads through
// GOPROXY=file://DIR (https://go.dev/ref/mod#goproxy-protocol). The zips are
// made with golang.org/x/mod/zip, which applies the proxy's own rules
// (reserved file names, size limits, no nested modules), so a tree that
// could not be published fails here first.
//
// The zips hold the working tree as git sees it: tracked and untracked
// files, less those .gitignore excludes, so that an uncommitted change is
// tested before it is tagged.
func BuildProxy(root, dir, version string) error {
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return fmt.Errorf("version %q is not a canonical semantic version such as v0.1.0", version)
	}
	mods, err := Modules(root)
	if err != nil {
		return err
	}
	stamp, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	for _, m := range mods {
		if !m.Published() {
			continue
		}
		mv := module.Version{Path: m.Path, Version: version}
		if err := module.Check(mv.Path, mv.Version); err != nil {
			return err
		}
		esc, err := module.EscapePath(m.Path)
		if err != nil {
			return err
		}
		vdir := filepath.Join(dir, filepath.FromSlash(esc), "@v")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			return err
		}
		gomod, err := os.ReadFile(filepath.Join(m.Dir, "go.mod"))
		if err != nil {
			return err
		}
		files, err := workingTree(m.Dir)
		if err != nil {
			return err
		}
		var z bytes.Buffer
		if err := zip.Create(&z, mv, files); err != nil {
			return fmt.Errorf("zip of %s: %w", mv, err)
		}
		for name, data := range map[string][]byte{
			"list":            []byte(version + "\n"),
			version + ".info": stamp,
			version + ".mod":  gomod,
			version + ".zip":  z.Bytes(),
		} {
			if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// workingTree lists the files of the module in dir as git sees them,
// leaving out nested modules, whose files belong to their own zips.
func workingTree(dir string) ([]zip.File, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %v: %s", dir, err, stderr.Bytes())
	}
	var files []zip.File
	nested := map[string]bool{} // directory (slash path) -> holds a go.mod
	inNested := func(rel string) bool {
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			held, ok := nested[d]
			if !ok {
				_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(d), "go.mod"))
				held = err == nil
				nested[d] = held
			}
			if held {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{} // a file in a merge conflict is listed once per stage
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if rel == "" || seen[rel] || inNested(rel) {
			continue
		}
		seen[rel] = true
		abs := filepath.Join(dir, filepath.FromSlash(rel))
		info, err := os.Lstat(abs)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the working tree, not yet committed
		}
		if err != nil {
			return nil, err
		}
		files = append(files, file{rel: rel, abs: abs, info: info})
	}
	return files, nil
}

type file struct {
	rel, abs string
	info     fs.FileInfo
}

func (f file) Path() string                 { return f.rel }
func (f file) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f file) Open() (io.ReadCloser, error) { return os.Open(f.abs) }
