package retryotel

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/stormguard/retry"
)

// Every stop reason the core defines has an outcome of its own.
func TestOutcomeForEveryStopReason(t *testing.T) {
	t.Parallel()
	seen := map[string]retry.StopReason{}
	for s := retry.StopSuccess; s <= retry.StopStale; s++ {
		name := outcomes[outcomeOf(s)]
		assert.NotEqual(t, "unknown", name, "outcome of %v", s)
		if prev, ok := seen[name]; ok {
			t.Errorf("%v and %v share the outcome %q", prev, s, name)
		}
		seen[name] = s
	}
}
