package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	return recs
}

func TestStormCSVs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := defaultStorm()
	rows := []stormRow{
		{Strategy: "NoJitter", Runs: 2, Peak: 18, MaxPeak: 18, Calls: 104, Done: 16200 * time.Millisecond,
			Sample: stormRun{Arrivals: []int{0, 0, 3}}},
		{Strategy: "NoJitter", Budget: true, Runs: 2, Calls: 22.5, Done: 250 * time.Millisecond, GaveUp: 18},
		{Strategy: "FullJitter", Runs: 2, Peak: 1.5, MaxPeak: 2, Calls: 90, Done: 3 * time.Second,
			Sample: stormRun{Arrivals: []int{1}}},
	}
	require.NoError(t, writeStormCSV(filepath.Join(dir, "s.csv"), rows))
	assert.Equal(t, [][]string{
		{"strategy", "budget", "runs", "mean_peak_per_window", "max_peak_per_window", "mean_calls", "mean_all_done_ms", "mean_gave_up"},
		{"NoJitter", "false", "2", "18", "18", "104", "16200", "0"},
		{"NoJitter", "true", "2", "0", "0", "22.5", "250", "18"},
		{"FullJitter", "false", "2", "1.5", "2", "90", "3000", "0"},
	}, readCSV(t, filepath.Join(dir, "s.csv")))

	require.NoError(t, writeArrivalsCSV(filepath.Join(dir, "a.csv"), cfg, rows))
	assert.Equal(t, [][]string{
		{"window_start_ms", "NoJitter", "FullJitter"},
		{"0", "0", "1"},
		{"10", "0", "0"},
		{"20", "3", "0"},
	}, readCSV(t, filepath.Join(dir, "a.csv")))
}

func TestContentionCSV(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.csv")
	require.NoError(t, writeContentionCSV(path, []contentionPoint{
		{Strategy: "FullJitter", Clients: 10, Runs: 100, Calls: 39.25, Time: 461500 * time.Microsecond},
	}))
	assert.Equal(t, [][]string{
		{"clients", "strategy", "runs", "mean_write_calls", "mean_completion_time"},
		{"10", "FullJitter", "100", "39.25", "461.5"},
	}, readCSV(t, path))
}
