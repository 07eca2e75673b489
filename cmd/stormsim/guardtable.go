package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/stormguard/retry"
)

// The guarded scenarios print Markdown tables, to paste into the guide as
// they are, each under a paragraph that states the model.

// span formats d for the tables' prose: "60s", "16.7s", "100ms".
func span(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.String()
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

func describeLoad(l load) string {
	p := retry.Policy{MaxAttempts: l.Attempts}
	return fmt.Sprintf("%d callers share one Policy (MaxAttempts %d, waits %s, FullJitter), each calling once per %v (%.0f calls/s); the backend answers in %v",
		l.Clients, l.Attempts, describeWaits(p), span(l.Every), float64(l.Clients)/l.Every.Seconds(), span(l.Latency))
}

func writeOutageTable(w io.Writer, l load, rows []outageRow, runs int) {
	fmt.Fprintf(w, "Hard outage. %s, fails every attempt for %v, then serves every one. Means of %d runs (seeds from %d).\n\n",
		describeLoad(l), span(l.DownUntil), runs, l.Seed)
	fmt.Fprintln(w, "| control | backend attempts per call during the outage | ≥ 95% of calls succeed again after | target |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, r := range rows {
		rec, target := "never", "–"
		if r.Recovered {
			rec = seconds(r.Recovery)
		}
		if r.Target > 0 {
			target = "≤ " + seconds(r.Target)
		}
		fmt.Fprintf(w, "| %s | %.4f | %s | %s |\n", r.Control.Name, r.PerCall, rec, target)
	}
	fmt.Fprintln(w)
}

func writeOverloadTable(w io.Writer, l load, rows []overloadRow, runs int) {
	fmt.Fprintf(w, "Overload. %s; it serves C = %d attempts/s (%d per %v) and fails the rest at once with a 503; offered %.0fC. Counted after the first %v. Means of %d runs (seeds from %d).\n\n",
		describeLoad(l), overloadCapacity, l.Capacity, span(l.Slot), float64(l.Clients)/l.Every.Seconds()/overloadCapacity, span(overloadSettled), runs, l.Seed)
	fmt.Fprintln(w, "| control | backend serves (× C) | rejected attempts per served one | calls that succeed |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %.3f | %.3f | %.1f%% |\n", r.Control.Name, r.Accepted, r.RejectedPerAccepted, 100*r.Succeeded)
	}
	fmt.Fprintln(w)
}

func writeLightTable(w io.Writer, l load, rows []lightRow) {
	fmt.Fprintf(w, "Light failure. %s, fails %.0f%% of attempts at random, for %v. Seed %d.\n\n",
		describeLoad(l), 100*l.FailRatio, span(l.Length), l.Seed)
	fmt.Fprintln(w, "| control | calls | succeeded | throttled | highest reject probability | breaker refused | breaker left closed |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---|")
	for _, r := range rows {
		closed := "–"
		if r.Control.Breaker != nil {
			closed = yesNo(!r.Opened)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %g | %d | %s |\n",
			r.Control.Name, r.Calls, r.Succeeded, r.Throttled, r.MaxRejectP, r.BreakerOpen, closed)
	}
	fmt.Fprintln(w)
}

func writeProbeTable(w io.Writer, l load, r probeResult) {
	rounds := make([]string, len(r.Rounds))
	for i, n := range r.Rounds {
		rounds[i] = strconv.Itoa(n)
	}
	fmt.Fprintf(w, "Breaker with retries. %s, fails every attempt for %v; no Budget, BreakerOptions{} (Probes %d). Seed %d.\n\n",
		describeLoad(l), span(l.DownUntil), r.Probes, l.Seed)
	fmt.Fprintln(w, "| attempts sent while closed | while open | in each half-open round | retries among them | calls refused |")
	fmt.Fprintln(w, "|---:|---:|---|---:|---:|")
	fmt.Fprintf(w, "| %d | %d | %s | %d | %d of %d |\n\n", r.Closed, r.WhileOpen, strings.Join(rounds, ", "), r.Retries, r.Refused, r.TotalCalls)
}

func writeLogTable(w io.Writer, c logStorm, r logResult) {
	fmt.Fprintf(w, "Logs during an outage. %d requests/s for %v, then %d/s until %v, against one origin that answers 503, through a retryhttp.Transport (MaxAttempts %d, Logger, default LogSampling) on a fake clock.\n\n",
		c.Rate, span(c.Burst), c.Trickle, span(c.Length), c.Attempts)
	mins := make([]string, 0, len(r.PerMin))
	for i := range int(c.Length / time.Minute) {
		mins = append(mins, strconv.Itoa(r.PerMin[i]))
	}
	fmt.Fprintln(w, "| requests | events (retries and give-ups) | lines in each minute | lines written as they came | summaries | events the summaries count |")
	fmt.Fprintln(w, "|---:|---:|---|---:|---:|---:|")
	fmt.Fprintf(w, "| %d | %d | %s | %d | %d | %d |\n\n", r.Requests, r.Events, strings.Join(mins, ", "), r.Written, r.Summary, r.Suppressed)
}
