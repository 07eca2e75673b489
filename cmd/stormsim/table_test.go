package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDescribeWaitsReadsTheLibrarysDefaults(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "200ms·2^(n−1) capped at 5s", describeWaits(retry.Policy{}))
	assert.Equal(t, "10ms·3^(n−1) capped at 1s",
		describeWaits(retry.Policy{BaseBackoff: 10 * time.Millisecond, Factor: 3, MaxBackoff: time.Second, Jitter: retry.FullJitter}))
}

func TestStormTable(t *testing.T) {
	t.Parallel()
	cfg := defaultStorm()
	rows := []stormRow{
		{Strategy: "NoJitter", Runs: 100, Peak: 18, MaxPeak: 18, Calls: 104, Done: 16200 * time.Millisecond},
		{Strategy: "NoJitter", Budget: true, Runs: 100, Calls: 22, Done: 200 * time.Millisecond, GaveUp: 18},
	}
	var b bytes.Buffer
	require.NoError(t, writeStormTable(&b, cfg, rows))
	out := b.String()
	assert.Contains(t, out, "18 clients lose the network together at t=0; it returns at 1s.")
	assert.Contains(t, out, "MaxAttempts 10 and waits of 200ms·2^(n−1) capped at 5s")
	assert.Contains(t, out, "guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Equal(t, []string{"NoJitter", "no", "18.0", "18", "104.0", "16.20s", "0.0"}, strings.Fields(lines[len(lines)-2]))
	assert.Equal(t, []string{"NoJitter", "yes", "0.0", "0", "22.0", "0.20s", "18.0"}, strings.Fields(lines[len(lines)-1]))
}

func TestContentionTable(t *testing.T) {
	t.Parallel()
	cfg := defaultContention()
	cfg.Clients = []int{10, 20}
	points := []contentionPoint{
		{Strategy: "FullJitter", Clients: 10, Calls: 39.4, Time: 461 * unit},
		{Strategy: "FullJitter", Clients: 20, Calls: 101, Time: 1026 * unit},
		{Strategy: "NoBackoff", Clients: 10, Calls: 52, Time: 386 * unit},
		{Strategy: "NoBackoff", Clients: 20, Calls: 153, Time: 604 * unit},
	}
	var b bytes.Buffer
	require.NoError(t, writeContentionTable(&b, cfg, points))
	out := b.String()
	assert.Contains(t, out, "min(2000, 5·2ⁿ)")
	assert.Contains(t, out, "|Normal(10, 2)|")
	calls, times, ok := strings.Cut(out, "completion time")
	require.True(t, ok)
	assert.Regexp(t, `(?m)^\s+N\s+FullJitter\s+NoBackoff\s*$`, calls)
	assert.Regexp(t, `(?m)^\s+10\s+39\s+52\s*$`, calls)
	assert.Regexp(t, `(?m)^\s+20\s+101\s+153\s*$`, calls)
	assert.Regexp(t, `(?m)^\s+20\s+1026\s+604\s*$`, times)
}
