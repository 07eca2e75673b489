package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain fails the tests if a goroutine outlives them: scenario B's
// workers must all have returned when simulateContention does.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRunWritesTablesCSVsAndCharts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run([]string{"-scenario", "a,b", "-out", dir, "-runs", "3", "-n", "5,10", "-seed", "7"}, &stdout, &stderr)
	require.NoError(t, err, "stderr: %s", stderr.String())

	assert.Contains(t, stdout.String(), "Scenario A: retry storm")
	assert.Contains(t, stdout.String(), "Scenario B: optimistic-concurrency contention")
	assert.Contains(t, stderr.String(), "scenario B: 100% (36 of 36 runs)")
	for _, name := range []string{
		"storm.csv", "storm_arrivals.csv", "storm_arrivals.png", "storm_arrivals.svg",
		"contention.csv", "contention_calls.png", "contention_calls.svg",
		"contention_time.png", "contention_time.svg",
	} {
		info, err := os.Stat(filepath.Join(dir, name))
		if assert.NoError(t, err, name) {
			assert.Positive(t, info.Size(), "%s is empty", name)
		}
	}
}

func TestRunOneScenario(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	require.NoError(t, run([]string{"-scenario", "a", "-out", dir, "-runs", "2"}, &stdout, &stderr))
	assert.Contains(t, stdout.String(), "Scenario A")
	assert.NotContains(t, stdout.String(), "Scenario B")
	assert.NoFileExists(t, filepath.Join(dir, "contention.csv"))
}

// The guarded scenarios, small: every table, CSV file and chart.
func TestRunGuards(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run([]string{"-scenario", "guards", "-guard-clients", "50", "-log-rate", "20", "-guard-runs", "2", "-out", dir}, &stdout, &stderr)
	require.NoError(t, err, "stderr: %s", stderr.String())
	for _, title := range []string{"Hard outage.", "Overload.", "Light failure.", "Low traffic.", "Breaker with retries.", "Logs during an outage."} {
		assert.Contains(t, stdout.String(), title)
	}
	for _, c := range guardControls() {
		assert.Contains(t, stdout.String(), "| "+c.Name+" |")
	}
	assert.NotContains(t, stdout.String(), "Scenario A")
	for _, name := range []string{"outage.csv", "outage_series.csv", "overload.csv", "overload_series.csv"} {
		info, err := os.Stat(filepath.Join(dir, name))
		if assert.NoError(t, err, name) {
			assert.Positive(t, info.Size(), "%s is empty", name)
		}
	}
	requireImages(t, dir, "outage", "overload")
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-scenario", "c"},
		{"-scenario", "a,nope"},
		{"-guard-clients", "0", "-scenario", "outage"},
		{"-log-rate", "0", "-scenario", "logs"},
		{"-guard-runs", "0", "-scenario", "outage"},
		{"-n", "10:5:1"},
		{"-n", "ten"},
		{"-runs", "0"},
		{"-clients", "0", "-scenario", "a"},
		{"-attempts", "0", "-scenario", "a"},
		{"-budget-ratio", "20", "-scenario", "a"},
		{"stray"},
	} {
		var stdout, stderr bytes.Buffer
		args = append(args, "-out", t.TempDir())
		assert.Error(t, run(args, &stdout, &stderr), "run(%q)", args)
	}
}

func TestParseCounts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want []int
	}{
		{"10:190:10", []int{10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160, 170, 180, 190}},
		{"5:6:10", []int{5}},
		{"3", []int{3}},
		{"1, 2,40", []int{1, 2, 40}},
	}
	for _, c := range cases {
		got, err := parseCounts(c.in)
		if assert.NoError(t, err, "parseCounts(%q)", c.in) {
			assert.Equal(t, c.want, got, "parseCounts(%q)", c.in)
		}
	}
	for _, bad := range []string{"", "0", "-1", "1:2", "5:1:1", "1:5:0", "a:b:c", "1,,2"} {
		_, err := parseCounts(bad)
		assert.Error(t, err, "parseCounts(%q)", bad)
	}
}
