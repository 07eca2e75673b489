// Command apisnapshot checks, or with -update rewrites, the snapshot of every
// published module's exported API in api/*.txt. Run it from anywhere in the
// repository:
//
//	go run ./internal/tools/cmd/apisnapshot          # fails on an unrecorded exported change
//	go run ./internal/tools/cmd/apisnapshot -update  # records the API as the code has it
//
// After -update, the diff of api/ is the review of the API change, and the
// change belongs in CHANGELOG.md.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/stormguard/retry/internal/tools/apisnapshot"
	"github.com/stormguard/retry/internal/tools/release"
)

func main() {
	update := flag.Bool("update", false, "rewrite api/*.txt from the code instead of checking it")
	flag.Parse()
	if err := run(*update); err != nil {
		fmt.Fprintln(os.Stderr, "apisnapshot:", err)
		os.Exit(1)
	}
}

func run(update bool) error {
	root, err := release.FindRoot(".")
	if err != nil {
		return err
	}
	snap, err := apisnapshot.Generate(root)
	if err != nil {
		return err
	}
	if update {
		if err := apisnapshot.Write(root, snap); err != nil {
			return err
		}
		fmt.Printf("apisnapshot: wrote %d files in %s/; review git diff %[2]s and record the change in CHANGELOG.md\n", len(snap), apisnapshot.Dir)
		return nil
	}
	diffs, err := apisnapshot.Diff(root, snap)
	if err != nil {
		return err
	}
	if len(diffs) > 0 {
		for _, d := range diffs {
			fmt.Fprintln(os.Stderr, d)
		}
		return fmt.Errorf("the exported API differs from %s/ (above: - recorded, + in the code); if the change is meant, run go run ./internal/tools/cmd/apisnapshot -update and add it to CHANGELOG.md", apisnapshot.Dir)
	}
	fmt.Printf("apisnapshot: the exported API matches %s/\n", apisnapshot.Dir)
	return nil
}
