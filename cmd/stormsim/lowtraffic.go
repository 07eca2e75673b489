package main

import (
	"fmt"
	"io"
	"time"

	"github.com/stormguard/retry"
)

// lowTrafficLoad is a small service: 10 callers, each calling once an
// hour (10 calls an hour), 3 attempts per call, against a backend that is
// never down but fails 20% of attempts at random, for a day. A call that
// may retry fails only when all three of its attempts do (0.8%); one
// refused its retries fails with its first attempt (20%).
func lowTrafficLoad(seed uint64) load {
	return load{
		Clients:   10,
		Every:     time.Hour,
		Length:    24 * time.Hour,
		Attempts:  3,
		Latency:   100 * time.Millisecond,
		FailRatio: 0.2,
		Bucket:    time.Minute,
		Seed:      seed,
	}
}

// lowTrafficRow is what one control did for the small service, summed
// over its runs.
type lowTrafficRow struct {
	Control   control
	Calls     int
	Succeeded int
	Budgeted  int // calls that failed because the Budget refused a retry
	Sent      int // attempts that reached the backend
}

// lowTrafficControls are the rows: no budget, the token bucket that
// starves a small service, and the ratio budget whose floor does not.
func lowTrafficControls() []control { return []control{noControl, budgetOnly, ratioOnly} }

// simulateLowTraffic runs the small service runs times per control, run r
// with seed l.Seed+r.
func simulateLowTraffic(l load, controls []control, runs int) ([]lowTrafficRow, error) {
	rows := make([]lowTrafficRow, 0, len(controls))
	for _, c := range controls {
		row := lowTrafficRow{Control: c}
		_, err := eachSeed(l, c, runs, func(_ load, run guardRun) {
			for _, b := range run.Buckets {
				row.Calls += b.Calls
				row.Succeeded += b.Succeeded
				row.Budgeted += b.Budgeted
				row.Sent += b.Sent
			}
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func writeLowTrafficTable(w io.Writer, l load, rows []lowTrafficRow, runs int) {
	// describeLoad's calls a second would read 0 here.
	p := retry.Policy{MaxAttempts: l.Attempts}
	fmt.Fprintf(w, "Low traffic. %d callers share one Policy (MaxAttempts %d, waits %s, FullJitter), each calling once per %v (%.0f calls an hour); the backend answers in %v, fails %.0f%% of attempts at random, for %v. Sums of %d runs (seeds from %d).\n\n",
		l.Clients, l.Attempts, describeWaits(p), l.Every, float64(l.Clients)*float64(time.Hour)/float64(l.Every), span(l.Latency),
		100*l.FailRatio, l.Length, runs, l.Seed)
	fmt.Fprintln(w, "| control | calls | succeeded | failed for want of a retry | backend attempts per call |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %d | %.1f%% | %d | %.3f |\n", r.Control.Name, r.Calls,
			100*float64(r.Succeeded)/float64(max(r.Calls, 1)), r.Budgeted, float64(r.Sent)/float64(max(r.Calls, 1)))
	}
	fmt.Fprintln(w)
}
