package main

import (
	"encoding/csv"
	"os"
	"strconv"
	"time"
)

// The CSV files hold the numbers behind the tables and the charts, one
// observation per line, times in milliseconds (scenario B's time units).

// writeStormCSV writes scenario A's rows.
func writeStormCSV(path string, rows []stormRow) error {
	recs := [][]string{{"strategy", "budget", "runs", "mean_peak_per_window", "max_peak_per_window", "mean_calls", "mean_all_done_ms", "mean_gave_up"}}
	for _, r := range rows {
		recs = append(recs, []string{
			r.Strategy, strconv.FormatBool(r.Budget), strconv.Itoa(r.Runs),
			ftoa(r.Peak), strconv.Itoa(r.MaxPeak), ftoa(r.Calls), ms(r.Done), ftoa(r.GaveUp),
		})
	}
	return writeCSV(path, recs)
}

// writeArrivalsCSV writes the arrivals per window of run 0 of each
// strategy without a budget: the data of the arrivals chart.
func writeArrivalsCSV(path string, cfg stormConfig, rows []stormRow) error {
	header := []string{"window_start_ms"}
	var samples [][]int
	windows := 0
	for _, r := range rows {
		if r.Budget {
			continue
		}
		header = append(header, r.Strategy)
		samples = append(samples, r.Sample.Arrivals)
		windows = max(windows, len(r.Sample.Arrivals))
	}
	recs := [][]string{header}
	for w := range windows {
		rec := []string{ms(time.Duration(w) * cfg.Window)}
		for _, a := range samples {
			n := 0
			if w < len(a) {
				n = a[w]
			}
			rec = append(rec, strconv.Itoa(n))
		}
		recs = append(recs, rec)
	}
	return writeCSV(path, recs)
}

// writeContentionCSV writes scenario B's points.
func writeContentionCSV(path string, points []contentionPoint) error {
	recs := [][]string{{"clients", "strategy", "runs", "mean_write_calls", "mean_completion_time"}}
	for _, p := range points {
		recs = append(recs, []string{
			strconv.Itoa(p.Clients), p.Strategy, strconv.Itoa(p.Runs), ftoa(p.Calls), ms(p.Time),
		})
	}
	return writeCSV(path, recs)
}

func writeCSV(path string, recs [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if err := w.WriteAll(recs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func ms(d time.Duration) string { return ftoa(float64(d) / float64(time.Millisecond)) }
