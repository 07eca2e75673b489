package main

import (
	"time"

	"github.com/stormguard/retry/guard"
)

// lightLoad is light failure at normal load: the hard outage's callers
// against a backend with no outage and no capacity limit that fails 5% of
// attempts at random, for 3 minutes.
func lightLoad(seed uint64) load {
	l := outageLoad(seed)
	l.DownUntil, l.FailRatio, l.Length = 0, 0.05, 3*time.Minute
	return l
}

// lightRow is what one control did under light failure.
type lightRow struct {
	Control     control
	Calls       int
	Succeeded   int
	Throttled   int     // calls the Throttle stopped
	MaxRejectP  float64 // the highest reject probability sampled, each bucket
	BreakerOpen int     // calls the Breaker stopped
	Opened      bool    // the Breaker was seen open or half-open at a bucket's end
}

// simulateLight runs light failure with a Throttle and with a Breaker.
func simulateLight(l load) ([]lightRow, error) {
	var rows []lightRow
	for _, c := range []control{budgetThrottle, budgetBreaker} {
		run, err := runGuarded(l, c, false)
		if err != nil {
			return nil, err
		}
		row := lightRow{Control: c}
		for _, b := range run.Buckets {
			row.Calls += b.Calls
			row.Succeeded += b.Succeeded
			row.Throttled += b.Throttled
			row.BreakerOpen += b.BreakerOpen
			row.MaxRejectP = max(row.MaxRejectP, b.RejectP)
			row.Opened = row.Opened || b.State != guard.BreakerClosed
		}
		rows = append(rows, row)
	}
	return rows, nil
}
