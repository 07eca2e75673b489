package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireImages checks that each chart exists as a PNG that decodes and
// an SVG that is one.
func requireImages(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name+".png"))
		require.NoError(t, err)
		img, err := png.Decode(bytes.NewReader(b))
		require.NoError(t, err, name+".png")
		assert.Greater(t, img.Bounds().Dx(), 400, name+".png width")

		b, err = os.ReadFile(filepath.Join(dir, name+".svg"))
		require.NoError(t, err)
		assert.Contains(t, string(b), "<svg", name+".svg")
	}
}

func TestStormChart(t *testing.T) {
	t.Parallel()
	cfg := defaultStorm()
	cfg.Runs = 1
	rows, err := simulateStorm(cfg)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, writeStormChart(dir, cfg, rows))
	requireImages(t, dir, "storm_arrivals")
	svg, err := os.ReadFile(filepath.Join(dir, "storm_arrivals.svg"))
	require.NoError(t, err)
	for _, s := range jitterStrategies() {
		assert.Contains(t, string(svg), s.name, "a panel is missing")
	}
}

func TestContentionCharts(t *testing.T) {
	t.Parallel()
	cfg := defaultContention()
	cfg.Clients, cfg.Runs = []int{5, 10, 15}, 2
	points, err := simulateContention(cfg, nil)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, writeContentionCharts(dir, cfg, points))
	requireImages(t, dir, "contention_calls", "contention_time")
}

func TestLogTicksLabelOneTwoFive(t *testing.T) {
	t.Parallel()
	var labels []string
	for _, tk := range logTicks.Ticks(2.5, 4.1) { // 316 … 12589
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	assert.Equal(t, []string{"500", "1000", "2000", "5000", "10000"}, labels)
}

func TestClientTicksLabelAtMostTen(t *testing.T) {
	t.Parallel()
	ns, _ := parseCounts("10:190:10")
	var labels []string
	for _, tk := range clientTicks(ns).Ticks(0, 0) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	assert.Equal(t, []string{"10", "30", "50", "70", "90", "110", "130", "150", "170", "190"}, labels)
}

func TestWholeTicks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		lo, hi float64
		want   []string
	}{
		{37, 8007, []string{"2000", "4000", "6000", "8000"}},
		{0, 1, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
		{3, 3, []string{"3"}},
		{0, 104, []string{"0", "50", "100"}},
		{10, 190, []string{"50", "100", "150"}},
	}
	for _, c := range cases {
		var labels []string
		for _, tk := range wholeTicks.Ticks(c.lo, c.hi) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		assert.Equal(t, c.want, labels, "wholeTicks(%v, %v)", c.lo, c.hi)
	}
}
