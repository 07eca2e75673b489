// Command release checks and prepares a release of every module of
// github.com/stormguard/retry at one version. Run it from anywhere in the
// repository:
//
//	go run ./internal/tools/cmd/release check          # requires agree, go.work, CHANGELOG.md
//	go run ./internal/tools/cmd/release set v0.2.0     # require v0.2.0 everywhere, in go.work too
//	go run ./internal/tools/cmd/release tags           # the git tags of the prepared version
//	go run ./internal/tools/cmd/release proxy DIR      # a GOPROXY=file://DIR of the working tree
//
// docs/releasing.md gives the whole procedure.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/stormguard/retry/internal/tools/release"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: release check | set VERSION | tags | proxy DIR")
	}
	flag.Parse()
	if err := run(flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		flag.Usage()
		os.Exit(2)
	}
	root, err := release.FindRoot(".")
	if err != nil {
		return err
	}
	switch {
	case args[0] == "check" && len(args) == 1:
		if err := release.Check(root); err != nil {
			return err
		}
		v, _ := release.PreparedVersion(root)
		fmt.Println("release: ready to tag", v)
		return nil
	case args[0] == "tags" && len(args) == 1:
		v, err := release.PreparedVersion(root)
		if err != nil {
			return err
		}
		tags, err := release.Tags(root, v)
		if err != nil {
			return err
		}
		for _, t := range tags {
			fmt.Println(t)
		}
		return nil
	case args[0] == "proxy" && len(args) == 2:
		v, err := release.PreparedVersion(root)
		if err != nil {
			return err
		}
		dir, err := filepath.Abs(args[1])
		if err != nil {
			return err
		}
		if err := release.BuildProxy(root, dir, v); err != nil {
			return err
		}
		fmt.Printf("release: GOPROXY=file://%s serves every module at %s\n", filepath.ToSlash(dir), v)
		return nil
	case args[0] == "set" && len(args) == 2:
		return set(root, args[1])
	}
	flag.Usage()
	os.Exit(2)
	return nil
}

// set moves every require of our own modules, and go.work's replaces, to
// version, with the go command's own editor.
func set(root, version string) error {
	old, err := release.PreparedVersion(root)
	if err != nil {
		return err
	}
	mods, err := release.Modules(root)
	if err != nil {
		return err
	}
	for _, m := range mods {
		var edits []string
		for p := range m.Requires {
			edits = append(edits, "-require="+p+"@"+version)
		}
		if len(edits) > 0 {
			if err := gocmd(m.Dir, append([]string{"mod", "edit"}, edits...)...); err != nil {
				return err
			}
		}
	}
	var edits []string
	for _, m := range mods {
		r, _ := filepath.Rel(root, m.Dir)
		for _, n := range mods {
			if _, ok := n.Requires[m.Path]; ok {
				edits = append(edits, "-dropreplace="+m.Path+"@"+old, "-replace="+m.Path+"@"+version+"=./"+filepath.ToSlash(r))
				break
			}
		}
	}
	if err := gocmd(root, append([]string{"work", "edit"}, edits...)...); err != nil {
		return err
	}
	fmt.Printf("release: %s -> %s; now add a CHANGELOG.md section \"## [%s]\" and run release check\n", old, version, version[1:])
	return nil
}

func gocmd(dir string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}
