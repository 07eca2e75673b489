package retry_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Do's loop keeps its defers open-coded, so that a call that succeeds at
// once pays nothing for them: the compiler open-codes a function's defers
// only while its returns × defers stay ≤ 15, which one more early return
// in run undoes without a word (it did once: a refusal's return made them
// stack-allocated, +30 ns a call).
func TestLoopDefersAreOpenCoded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool")
	}
	out, err := exec.Command(goTool, "build", "-gcflags=-d=defer", "-o", "/dev/null", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	open := 0
	for line := range strings.Lines(string(out)) {
		if !strings.Contains(line, "retry.go:") && !strings.Contains(line, "sleep.go:") {
			continue
		}
		if !strings.Contains(line, "open-coded defer") {
			t.Errorf("a defer of Do's loop is not open-coded: %s", strings.TrimSpace(line))
		}
		open++
	}
	if open == 0 {
		t.Fatalf("no defer reported in retry.go; go build said:\n%s", out)
	}
}
