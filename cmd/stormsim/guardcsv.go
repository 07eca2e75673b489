package main

import (
	"strconv"
	"time"
)

// writeOutageCSV writes the hard outage's rows.
func writeOutageCSV(path string, rows []outageRow) error {
	recs := [][]string{{"control", "backend_attempts_per_call_during_outage", "recovered", "recovery_ms", "target_ms"}}
	for _, r := range rows {
		recs = append(recs, []string{r.Control.Name, ftoa(r.PerCall), strconv.FormatBool(r.Recovered), ms(r.Recovery), ms(r.Target)})
	}
	return writeCSV(path, recs)
}

// writeOverloadCSV writes the overload's rows.
func writeOverloadCSV(path string, rows []overloadRow) error {
	recs := [][]string{{"control", "served_per_capacity", "rejected_per_served", "calls_succeeded"}}
	for _, r := range rows {
		recs = append(recs, []string{r.Control.Name, ftoa(r.Accepted), ftoa(r.RejectedPerAccepted), ftoa(r.Succeeded)})
	}
	return writeCSV(path, recs)
}

// writeSeriesCSV writes, per second and control, the attempts that reached
// the backend, those it served, and the calls started and succeeded: the
// data of the charts.
func writeSeriesCSV(path string, l load, runs []guardRun) error {
	recs := [][]string{{"second", "control", "attempts_sent", "attempts_served", "calls", "calls_succeeded"}}
	for _, run := range runs {
		for s, b := range perSecond(run, l) {
			recs = append(recs, []string{strconv.Itoa(s), run.Control.Name,
				strconv.Itoa(b.Sent), strconv.Itoa(b.Accepted), strconv.Itoa(b.Calls), strconv.Itoa(b.Succeeded)})
		}
	}
	return writeCSV(path, recs)
}

// perSecond sums a run's buckets by second, up to the end of its calls.
func perSecond(run guardRun, l load) []bucket {
	n := max(int(time.Second/l.Bucket), 1)
	out := make([]bucket, int((l.Length+time.Second-1)/time.Second))
	for i, b := range run.Buckets {
		s := i / n
		if s >= len(out) {
			break
		}
		o := &out[s]
		o.Calls, o.Succeeded, o.Sent, o.Accepted = o.Calls+b.Calls, o.Succeeded+b.Succeeded, o.Sent+b.Sent, o.Accepted+b.Accepted
		o.Throttled, o.BreakerOpen = o.Throttled+b.Throttled, o.BreakerOpen+b.BreakerOpen
	}
	return out
}
