package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// smallShed is the shed scenario at a size a test can afford: C = 5 (500
// requests/s), 200 clients (40 per unit of C, enough that an unbounded
// queue's latency passes the clients' timeout), 12 s runs, a 10 s outage
// watched for 15 s after.
func smallShed() shedConfig {
	return shedConfig{Capacity: 5, Clients: 200, Length: 12 * time.Second, Hang: 10 * time.Second, After: 15 * time.Second, Seed: 1}
}

func row(t *testing.T, rows []shedRow, c shedControl) shedRow {
	t.Helper()
	for _, r := range rows {
		if r.Control.is(c) {
			return r
		}
	}
	t.Fatalf("no row %q (honour %v)", c.Name, c.Honour)
	return shedRow{}
}

// The loop closed: the adaptive Limiter's jittered Retry-After, obeyed by
// clients with the library's rules, keeps the server busy, refuses few,
// and lets it recover from an outage at once; an unbounded queue answers
// every request after its client gave up; clients that ignore the
// Retry-After cost a refusal or more per success.
func TestShedTargets(t *testing.T) {
	t.Parallel()
	res, err := simulateShed(smallShed())
	require.NoError(t, err)
	controls := shedControls(smallShed().Capacity)
	none, ignoring, ours := controls[0], controls[3], adaptiveOurs(smallShed().Capacity)
	require.False(t, ignoring.Honour)
	require.Equal(t, ours.Name, ignoring.Name)

	got := row(t, res.Overload, ours)
	assert.GreaterOrEqual(t, got.Goodput, 0.95, "goodput at 3C, × C")
	assert.LessOrEqual(t, got.ShedPerSuccess, 1.1, "shed per success")
	assert.Less(t, got.Arrivals, 1.2, "arrivals at 3C offered, × C: the holds keep the clients back")

	collapsed := row(t, res.Overload, none)
	assert.Less(t, collapsed.Goodput, 0.1, "an unbounded queue serves only abandoned attempts")
	assert.Greater(t, collapsed.P99, 250*time.Millisecond, "beyond the clients' patience")

	rude := row(t, res.Overload, ignoring)
	assert.Greater(t, rude.ShedPerSuccess, 1.0, "clients that ignore Retry-After")
	assert.Greater(t, rude.Arrivals, 2.0)

	for _, r := range res.Outage {
		if !r.Control.is(ours) {
			continue
		}
		assert.LessOrEqual(t, r.Arrivals5s, 1.2, "arrivals in the first 5 s after the heal, × C")
		assert.Less(t, r.Arrivals5s, outageOffered-0.05, "arrivals in the first 5 s after the heal, × C: the held clients come back spread")
		assert.True(t, r.Recovered, "recovered")
		assert.LessOrEqual(t, r.Recovery, 10*time.Second, "95%% of calls succeed within 10 s again after %v", r.Recovery)
	}
	assert.False(t, res.Outage[0].Recovered, "an unbounded queue is still serving the outage's abandoned attempts")

	for _, r := range res.Variable {
		if r.Control.is(ours) && r.Spread == 1 {
			// A baseline that fell to the smallest window between probes
			// 10 s apart collapsed the limit under work this varied: 0.34
			// C at full scale.
			assert.GreaterOrEqual(t, r.Goodput, 0.85, "goodput with lognormal work of σ 1, × C")
		}
	}

	for _, r := range res.Priority {
		if r.Control.is(ours) {
			assert.GreaterOrEqual(t, r.Critical, 0.99, "Critical goodput, share of Critical demand up to C")
			assert.Less(t, r.Sheddable, 0.05, "Sheddable goodput, × C")
		}
	}
}

// The targets at its own scale (C = 20, 1,000 clients, a minute),
// for the two runs they are about: the adaptive Limiter with the zero
// Options, clients that honour Retry-After, at 3C; and at 3C with half the
// traffic Sheddable.
func TestShedTargetsAtFullScale(t *testing.T) {
	if testing.Short() {
		t.Skip("cmd/stormsim: the full-scale shed runs take seconds")
	}
	t.Parallel()
	c := defaultShedConfig()
	unloaded, err := runShed(c.base(0.5), shedControl{Name: "unloaded", Honour: true})
	require.NoError(t, err)
	ours := adaptiveOurs(c.Capacity)
	l := c.base(3)
	r, err := runShed(l, ours)
	require.NoError(t, err)
	got := summarize(l, ours, r)
	assert.GreaterOrEqual(t, got.Goodput, 0.95, "goodput at 3C, × C")
	assert.LessOrEqual(t, got.P99, 2*unloaded.p99(), "admitted p99, unloaded %v", unloaded.p99())
	assert.LessOrEqual(t, got.ShedPerSuccess, 1.1)

	l.SheddableShare = 0.5
	r, err = runShed(l, ours)
	require.NoError(t, err)
	pr := summarizePriority(l, ours, r)
	assert.GreaterOrEqual(t, pr.Critical, 0.99, "Critical goodput, share of Critical demand up to C")
}

// Seeded and deterministic: two runs write the same tables and the same
// CSV files, byte for byte; the charts are written too.
func TestRunShedRepeats(t *testing.T) {
	t.Parallel()
	out := func(dir string) []byte {
		var stdout, stderr bytes.Buffer
		err := run([]string{"-scenario", "shed", "-out", dir, "-shed-clients", "100", "-shed-capacity", "3",
			"-shed-length", "6s", "-shed-outage", "5s"}, &stdout, &stderr)
		require.NoError(t, err, "stderr: %s", stderr.String())
		for _, name := range []string{"shed.csv", "shed_outage.csv", "shed_priority.csv", "shed_variable.csv", "shed_series.csv"} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
			stdout.Write(b)
		}
		return stdout.Bytes()
	}
	dir := t.TempDir()
	first, second := out(dir), out(t.TempDir())
	assert.Equal(t, string(first), string(second))
	assert.Contains(t, string(first), "Shedding on the server.")
	assert.Contains(t, string(first), "| adaptive Limiter (defaults) | honour Retry-After |")
	requireImages(t, dir, "shed_overload", "shed_outage")
}

func TestRunRejectsBadShedFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-shed-clients", "0"},
		{"-shed-capacity", "0"},
		{"-shed-length", "1s"},
		{"-shed-outage", "-1s"},
	} {
		var stdout, stderr bytes.Buffer
		args = append(args, "-scenario", "shed", "-out", t.TempDir())
		assert.Error(t, run(args, &stdout, &stderr), "run(%q)", args)
	}
}
