package main

import (
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixedHops is scenario B with hops of exactly 10 units, so that a run can
// be worked out by hand.
func fixedHops() contentionConfig {
	cfg := defaultContention()
	cfg.HopDev = 0
	return cfg
}

func byName(t *testing.T, name string) strategy {
	t.Helper()
	for _, s := range append(jitterStrategies(), noBackoff) {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("no strategy %q", name)
	return strategy{}
}

func TestContentionOneClientMakesOneWrite(t *testing.T) {
	t.Parallel()
	for _, s := range append(jitterStrategies(), noBackoff) {
		var sim contention
		got := sim.run(fixedHops(), 1, s, runRand(1, 'B', 1, 0))
		// read out, read back, write out, verdict back: four hops.
		assert.Equal(t, contentionRun{Calls: 1, Time: 40 * unit}, got, s.name)
	}
}

// TestContentionTwoClientsByHand: both read version 0 at 10 and write at
// 30; the first scheduled wins. The loser hears so at 40, backs off 10
// (base·2¹) and needs four more hops: done at 90. Without backoff, at 80.
func TestContentionTwoClientsByHand(t *testing.T) {
	t.Parallel()
	var sim contention
	got := sim.run(fixedHops(), 2, byName(t, "NoJitter"), runRand(1, 'B', 2, 0))
	assert.Equal(t, contentionRun{Calls: 3, Time: 90 * unit}, got)

	got = sim.run(fixedHops(), 2, noBackoff, runRand(1, 'B', 2, 0))
	assert.Equal(t, contentionRun{Calls: 3, Time: 80 * unit}, got)
}

// TestContentionPolicyIsThePostsBackoff checks the mapping onto the
// library: NoJitter waits min(cap, base·2ⁿ) before retry n, and
// DecorrelatedJitter starts from uniform(base, 3·base).
func TestContentionPolicyIsThePostsBackoff(t *testing.T) {
	t.Parallel()
	cfg := defaultContention()
	p := contentionPolicy(cfg, byName(t, "NoJitter"))
	require.NoError(t, p.Validate())
	for n := 1; n <= 12; n++ {
		want := min(cfg.Cap, cfg.Base<<n)
		assert.Equal(t, want, p.Wait(n, 0, 0.5), "Wait(%d)", n)
	}

	d := contentionPolicy(cfg, byName(t, "DecorrelatedJitter"))
	require.NoError(t, d.Validate())
	assert.Equal(t, cfg.Base, d.Wait(1, 0, 0), "first decorrelated wait at u=0")
	assert.Equal(t, 3*cfg.Base-1, d.Wait(1, 0, 0.9999999999), "first decorrelated wait at u→1")
	assert.Equal(t, cfg.Cap, d.Wait(9, 1900*unit, 0.9), "decorrelated wait is capped")

	f := contentionPolicy(cfg, byName(t, "FullJitter"))
	assert.Equal(t, 10*unit, f.Wait(2, 0, 0.5), "FullJitter at u=0.5: half of base·2²")
}

// TestContentionIsDeterministic: the same seed gives the same means,
// however many workers share the runs.
func TestContentionIsDeterministic(t *testing.T) {
	t.Parallel()
	cfg := defaultContention()
	cfg.Clients, cfg.Runs = []int{5, 20}, 10
	cfg.Workers = 1
	one, err := simulateContention(cfg, nil)
	require.NoError(t, err)
	cfg.Workers = 3
	three, err := simulateContention(cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, one, three)

	cfg.Seed++
	other, err := simulateContention(cfg, nil)
	require.NoError(t, err)
	assert.NotEqual(t, one, other, "the seed changed nothing")
}

// TestContentionReproducesThePost checks, at a modest N, the post's
// findings: jitter cuts the work to well under that of plain exponential
// backoff or no backoff, and finishes far sooner than plain exponential.
func TestContentionReproducesThePost(t *testing.T) {
	t.Parallel()
	cfg := defaultContention()
	cfg.Clients, cfg.Runs = []int{50}, 20
	points, err := simulateContention(cfg, nil)
	require.NoError(t, err)
	got := map[string]contentionPoint{}
	for _, p := range points {
		got[p.Strategy] = p
		assert.GreaterOrEqual(t, p.Calls, 50.0, "%s: fewer writes than clients", p.Strategy)
	}
	require.Len(t, got, 6)
	for _, name := range []string{"FullJitter", "EqualJitter", "DecorrelatedJitter"} {
		assert.Less(t, got[name].Calls, 0.7*got["NoJitter"].Calls, "%s calls vs NoJitter", name)
		assert.Less(t, got[name].Calls, 0.7*got["NoBackoff"].Calls, "%s calls vs NoBackoff", name)
		assert.Less(t, got[name].Time, got["NoJitter"].Time/4, "%s time vs NoJitter", name)
	}
	assert.Less(t, got["FullJitter"].Time, got["EqualJitter"].Time, "FullJitter finishes before EqualJitter")
}

func TestContentionConfigValidation(t *testing.T) {
	t.Parallel()
	cases := map[string]func(*contentionConfig){
		"no N":          func(c *contentionConfig) { c.Clients = nil },
		"zero clients":  func(c *contentionConfig) { c.Clients = []int{10, 0} },
		"no runs":       func(c *contentionConfig) { c.Runs = 0 },
		"no base":       func(c *contentionConfig) { c.Base = 0 },
		"cap below 2·b": func(c *contentionConfig) { c.Cap = c.Base },
		"negative hop":  func(c *contentionConfig) { c.HopMean = -time.Millisecond },
	}
	for name, breakIt := range cases {
		cfg := defaultContention()
		breakIt(&cfg)
		_, err := simulateContention(cfg, nil)
		assert.Error(t, err, name)
	}
}

func TestContentionStrategiesAreTheLibrarys(t *testing.T) {
	t.Parallel()
	var names []string
	for _, s := range jitterStrategies() {
		names = append(names, s.name)
	}
	assert.Equal(t, []string{"NoJitter", "BandJitter(0.3)", "FullJitter", "EqualJitter", "DecorrelatedJitter"}, names)
	assert.Equal(t, retry.DecorrelatedJitter, jitterStrategies()[4].jitter)
}
