package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A service of 10 calls an hour whose backend fails a fifth of attempts:
// the A6 token bucket, which only successes refill at a tenth of a token,
// is drained within hours and then refuses retries for the rest of the
// day, so a fifth of the calls fail; the ratio budget's floor allows every
// retry, and calls fail only when all three attempts do. Neither sends
// more than the attempts allow.
func TestLowTrafficRatioBudgetKeepsRetries(t *testing.T) {
	t.Parallel()
	rows, err := simulateLowTraffic(lowTrafficLoad(1), lowTrafficControls(), 3)
	require.NoError(t, err)
	m := make(map[string]lowTrafficRow)
	for _, r := range rows {
		t.Logf("%s: %d calls, %d succeeded, %d refused a retry, %d attempts", r.Control.Name, r.Calls, r.Succeeded, r.Budgeted, r.Sent)
		m[r.Control.Name] = r
	}
	none, bucket, ratio := m[noControl.Name], m[budgetOnly.Name], m[ratioOnly.Name]
	require.Equal(t, 3*240, none.Calls, "10 calls an hour for a day, three runs")
	assert.Zero(t, none.Budgeted)
	assert.Zero(t, ratio.Budgeted, "the floor allows every retry")
	assert.Equal(t, none.Succeeded, ratio.Succeeded, "with a ratio budget, as with none")
	assert.Greater(t, bucket.Budgeted, none.Calls/10, "the token bucket refuses many")
	assert.Less(t, float64(bucket.Succeeded), 0.9*float64(ratio.Succeeded))
	assert.Greater(t, float64(ratio.Succeeded), 0.98*float64(ratio.Calls))

	// The same seeds give the same numbers.
	again, err := simulateLowTraffic(lowTrafficLoad(1), lowTrafficControls(), 3)
	require.NoError(t, err)
	assert.Equal(t, rows, again)

	var out bytes.Buffer
	writeLowTrafficTable(&out, lowTrafficLoad(1), rows, 3)
	assert.Contains(t, out.String(), "| "+ratioOnly.Name+" | 720 |")
}
