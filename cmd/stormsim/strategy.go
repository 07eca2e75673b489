package main

import (
	"fmt"

	"github.com/stormguard/retry"
)

// strategy is one way for clients to wait between attempts: one of the
// library's own jitters, or, in scenario B only, no backoff at all.
type strategy struct {
	name   string
	jitter retry.Jitter // nil: retry at once, the baseline of scenario B
}

// jitterStrategies are the library's built-in jitters, compared in both
// scenarios. Their names are the jitters' own String methods.
func jitterStrategies() []strategy {
	js := []retry.Jitter{
		retry.NoJitter,
		retry.BandJitter(0.3),
		retry.FullJitter,
		retry.EqualJitter,
		retry.DecorrelatedJitter,
	}
	ss := make([]strategy, len(js))
	for i, j := range js {
		ss[i] = strategy{name: fmt.Sprint(j), jitter: j}
	}
	return ss
}

// noBackoff is scenario B's baseline: a client that lost the race reads
// again as soon as it hears so. The library cannot express it on purpose
// (a zero Policy never means "retry without waiting").
var noBackoff = strategy{name: "NoBackoff"}
