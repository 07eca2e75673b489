package main

import (
	"fmt"
	"io"
	"sync"
)

// progress shows how far a long computation has got, as a percentage
// rewritten in place on a terminal line. It writes only when the whole
// percentage changes, so it costs nothing per step. Safe for concurrent use.
type progress struct {
	mu           sync.Mutex
	w            io.Writer // nil: show nothing
	label        string
	total, done  int
	shownPercent int
}

func newProgress(w io.Writer, label string, total int) *progress {
	p := &progress{w: w, label: label, total: total, shownPercent: -1}
	p.show()
	return p
}

// Add counts n more steps done.
func (p *progress) Add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	p.show()
}

// Done ends the line.
func (p *progress) Done() {
	if p.w != nil {
		fmt.Fprintln(p.w)
	}
}

func (p *progress) show() {
	if p.w == nil || p.total <= 0 {
		return
	}
	pct := 100 * p.done / p.total
	if pct == p.shownPercent {
		return
	}
	p.shownPercent = pct
	fmt.Fprintf(p.w, "\r%s: %3d%% (%d of %d runs)", p.label, pct, p.done, p.total)
}
