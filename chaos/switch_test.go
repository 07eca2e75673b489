package chaos_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stormguard/retry/chaos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gameDay is a mix of faults, all on the switch sw.
func gameDay(sw *chaos.Switch) []chaos.Fault {
	return []chaos.Fault{
		{Switch: sw, Rate: 0.1, Latency: 200 * time.Millisecond},
		{Switch: sw, Rate: 0.2, Status: 503, Header: http.Header{"Retry-After": {"1"}}},
		{Switch: sw, Rate: 0.05, Drop: true},
		{Switch: sw, Rate: 0.05, Err: errors.New("connection reset")},
	}
}

// sequence is what the first n requests of a new injector of the faults
// of seed get, in order.
func sequence(seed int64, n int) []string {
	sw := chaos.NewSwitch(seed)
	sw.On()
	in := chaos.NewInjector(gameDay(sw)...)
	out := make([]string, n)
	for i := range out {
		out[i] = describe(in.Decide(nil))
	}
	return out
}

func describe(d chaos.Decision) string {
	return fmt.Sprintf("%s/%v", d.Fault, d.Latency)
}

// The same seed and the same requests give the same faults, run after
// run; another seed gives others.
func TestSeedReproducible(t *testing.T) {
	t.Parallel()
	a, b := sequence(42, 1000), sequence(42, 1000)
	require.Equal(t, a, b, "two runs of seed 42")
	assert.NotEqual(t, a, sequence(43, 1000), "seed 43 draws as seed 42 did")

	// The draws are the seed's, not those of a shared source: another
	// switch drawing in between changes nothing.
	sw, other := chaos.NewSwitch(42), chaos.NewSwitch(42)
	sw.On()
	other.On()
	in, noise := chaos.NewInjector(gameDay(sw)...), chaos.NewInjector(gameDay(other)...)
	for i := range 1000 {
		noise.Decide(nil)
		require.Equal(t, a[i], describe(in.Decide(nil)), "request %d", i)
	}
}

// The draws are pinned: a change to the hash, or to what a request is
// drawn from, shows up here and in every game day's numbers.
func TestSeedPinned(t *testing.T) {
	t.Parallel()
	got := sequence(7, 12)
	assert.Equal(t, []string{
		"/0s", "503/0s", "/0s", "/0s", "503/0s", "/0s",
		"/0s", "503/0s", "503/0s", "/0s", "503/0s", "503/0s",
	}, got)
}

// The rates hold: over many requests, each fault fires at about its Rate
// of the requests drawn for it.
func TestRates(t *testing.T) {
	t.Parallel()
	sw := chaos.NewSwitch(1)
	sw.On()
	in := chaos.NewInjector(gameDay(sw)...)
	const n = 20000
	for range n {
		in.Decide(nil)
	}
	st := sw.Stats()
	require.Len(t, st.Faults, 4)
	for _, f := range st.Faults {
		rate := map[string]float64{"latency 200ms": 0.1, "503": 0.2, "drop": 0.05, "error": 0.05}[f.Name]
		got := float64(f.Injected) / float64(f.Requests)
		assert.InDelta(t, rate, got, 0.015, "%s: injected %d of %d", f.Name, f.Injected, f.Requests)
	}
	assert.Equal(t, uint64(n), st.Faults[slices.IndexFunc(st.Faults, func(f chaos.FaultStats) bool { return f.Name == "latency 200ms" })].Requests,
		"the first fault is drawn for on every request")
}

// Under concurrency the order of arrival changes, but not what the first
// N requests get between them: the counts are those of a run in order.
func TestSeedReproducibleConcurrent(t *testing.T) {
	t.Parallel()
	const n, workers = 4000, 8
	want := sequence(42, n)
	slices.Sort(want)

	sw := chaos.NewSwitch(42)
	sw.On()
	in := chaos.NewInjector(gameDay(sw)...)
	var (
		mu  sync.Mutex
		got []string
		wg  sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for range n / workers {
				d := describe(in.Decide(nil))
				mu.Lock()
				got = append(got, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(got)
	assert.Equal(t, want, got)

	ordered := chaos.NewSwitch(42)
	ordered.On()
	seq := chaos.NewInjector(gameDay(ordered)...)
	for range n {
		seq.Decide(nil)
	}
	assert.Equal(t, ordered.Stats(), sw.Stats(), "Stats of a concurrent run and of one in order")
}

// Two injectors of one switch draw apart, so that two dependencies given
// the same faults do not fail in step; made in the same order, they draw
// the same on every run.
func TestInjectorsDrawApart(t *testing.T) {
	t.Parallel()
	run := func() (a, b []string) {
		sw := chaos.NewSwitch(5)
		sw.On()
		x, y := chaos.NewInjector(gameDay(sw)...), chaos.NewInjector(gameDay(sw)...)
		for range 200 {
			a = append(a, describe(x.Decide(nil)))
			b = append(b, describe(y.Decide(nil)))
		}
		return a, b
	}
	a1, b1 := run()
	a2, b2 := run()
	assert.NotEqual(t, a1, b1)
	assert.Equal(t, a1, a2)
	assert.Equal(t, b1, b2)
}

// A switch that is off, or no switch at all, injects nothing and counts
// nothing; Off takes effect at once.
func TestSwitchOff(t *testing.T) {
	t.Parallel()
	always := func(sw *chaos.Switch) chaos.Fault { return chaos.Fault{Switch: sw, Rate: 1, Status: 503} }

	var zero chaos.Switch
	assert.False(t, zero.Enabled(), "the zero Switch")
	var none *chaos.Switch
	assert.False(t, none.Enabled(), "a nil Switch")
	assert.Equal(t, chaos.Stats{}, none.Stats())

	sw := chaos.NewSwitch(1)
	in := chaos.NewInjector(always(sw), always(nil))
	assert.False(t, sw.Enabled())
	assert.False(t, in.Active())
	assert.Zero(t, in.Decide(nil), "off")
	assert.Equal(t, []chaos.FaultStats{{Name: "503"}}, sw.Stats().Faults, "nothing counted while off")

	sw.On()
	assert.True(t, in.Active())
	assert.Equal(t, 503, in.Decide(nil).Status, "on")
	sw.Off()
	assert.Zero(t, in.Decide(nil), "off again")
	assert.Equal(t, chaos.Stats{Seed: 1, Faults: []chaos.FaultStats{{Name: "503", Requests: 1, Injected: 1}}}, sw.Stats())

	noSwitch := chaos.NewInjector(always(nil))
	assert.False(t, noSwitch.Active(), "an injector whose faults have no switch")
	var nilInjector *chaos.Injector
	assert.False(t, nilInjector.Active())
	assert.Zero(t, nilInjector.Decide(nil))
}

// A switch counts at most 100 names; the faults of further names are
// counted together.
func TestSwitchNamesBounded(t *testing.T) {
	t.Parallel()
	sw := chaos.NewSwitch(1)
	sw.On()
	for i := range 150 {
		in := chaos.NewInjector(chaos.Fault{Switch: sw, Name: fmt.Sprint("f", i), Rate: 1, Status: 503})
		in.Decide(nil)
	}
	st := sw.Stats()
	require.Len(t, st.Faults, 101)
	i := slices.IndexFunc(st.Faults, func(f chaos.FaultStats) bool { return f.Name == "(other faults)" })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, uint64(50), st.Faults[i].Injected)
}

// Faults of one injector on two switches fire only while their own is on.
func TestTwoSwitches(t *testing.T) {
	t.Parallel()
	slow, failing := chaos.NewSwitch(1), chaos.NewSwitch(2)
	in := chaos.NewInjector(
		chaos.Fault{Switch: slow, Rate: 1, Latency: time.Second},
		chaos.Fault{Switch: failing, Rate: 1, Status: 503},
	)
	slow.On()
	d := in.Decide(nil)
	assert.Equal(t, time.Second, d.Latency)
	assert.Zero(t, d.Status)
	slow.Off()
	failing.On()
	d = in.Decide(nil)
	assert.Zero(t, d.Latency)
	assert.Equal(t, 503, d.Status)
}

// Match limits a fault to the requests it picks.
func TestMatch(t *testing.T) {
	t.Parallel()
	sw := chaos.NewSwitch(1)
	sw.On()
	in := chaos.NewInjector(chaos.Fault{Switch: sw, Rate: 1, Status: 503, Match: func(r *http.Request) bool { return r.Method == http.MethodPost }})
	get, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
	post, _ := http.NewRequest(http.MethodPost, "http://x/", nil)
	assert.Zero(t, in.Decide(get).Status)
	assert.Equal(t, 503, in.Decide(post).Status)
	assert.Equal(t, []chaos.FaultStats{{Name: "503", Requests: 1, Injected: 1}}, sw.Stats().Faults)
}

// Faults never leak: a switch that is on arms its own faults only, never
// those of another switch or of none, and there is no switch of the
// package's own that anything could turn on.
func TestNoLeakAcrossSwitches(t *testing.T) {
	t.Parallel()
	on, off := chaos.NewSwitch(1), chaos.NewSwitch(1)
	on.On()
	always := chaos.Fault{Rate: 1, Status: 503}
	mine := always
	mine.Switch = on
	theirs := always
	theirs.Switch = off
	onlyTheirs, none, both := chaos.NewInjector(theirs), chaos.NewInjector(always), chaos.NewInjector(theirs, always)
	for range 100 {
		assert.Zero(t, onlyTheirs.Decide(nil))
		assert.Zero(t, none.Decide(nil))
		assert.Zero(t, both.Decide(nil))
	}
	assert.Equal(t, 503, chaos.NewInjector(mine).Decide(nil).Status, "the switch that is on")
	for _, f := range off.Stats().Faults {
		assert.Zero(t, f.Requests, "%s drawn for while its switch was off", f.Name)
	}
}
