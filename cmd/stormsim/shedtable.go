package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"
)

// clientsName says in a table how a row's clients treat a Retry-After.
func clientsName(c shedControl) string {
	switch {
	case c.Limiter == nil:
		return "either (no 503s)"
	case c.Honour:
		return "honour Retry-After"
	}
	return "ignore it"
}

func describeShed(c shedConfig, l shedLoad) string {
	return fmt.Sprintf("A server of C = %d concurrent requests, each worked on for %v (C = %.0f requests/s); beyond C in flight, work waits inside it (FIFO, no bound). %d clients, each a process of its own with the library's client rules: retry.Do (MaxAttempts 4, FullJitter), the zero Budget, an attempt abandoned after %v. Seed %d.",
		c.Capacity, span(l.Service), l.rate(), c.Clients, span(l.Timeout), c.Seed)
}

// writeShedTables prints the three tables of the shed scenario and the
// targets of the adaptive Limiter with clients that honour Retry-After.
func writeShedTables(w io.Writer, res shedResults) {
	c := res.Config
	l := c.base(3)
	fmt.Fprintf(w, "Shedding on the server. %s\n\n", describeShed(c, l))
	fmt.Fprintf(w, "Overload: offered 3C for %v, counted after the first %v. Unloaded (offered C/2, no shedding) p99 %s.\n\n",
		span(l.Length), span(l.Settled), msec(res.UnloadedP99))
	fmt.Fprintln(w, "| server | clients | goodput (× C) | arrivals (× C) | shed per success | admitted p99 | its queue wait p99 | calls that succeed | attempts abandoned /s |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range res.Overload {
		fmt.Fprintf(w, "| %s | %s | %.3f | %.2f | %.2f | %s | %s | %.1f%% | %.0f |\n", r.Control.Name, clientsName(r.Control),
			r.Goodput, r.Arrivals, r.ShedPerSuccess, msec(r.P99), msec(r.QueueP99), 100*r.Calls, r.TimedOut)
	}
	o := c.outage()
	fmt.Fprintf(w, "\nOutage: offered %.1fC; the server's work stops for %v from t = %v, then resumes.\n\n", outageOffered, span(o.Hang), span(o.HangFrom))
	fmt.Fprintln(w, "| server | clients | arrivals in the first 5 s after the heal (× C) | goodput in the first 10 s (× C) | ≥ 95% of calls succeed within 10 s again after |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|")
	for _, r := range res.Outage {
		rec := "never"
		if r.Recovered {
			rec = span(r.Recovery)
		}
		fmt.Fprintf(w, "| %s | %s | %.2f | %.3f | %s |\n", r.Control.Name, clientsName(r.Control), r.Arrivals5s, r.Goodput10s, rec)
	}
	fmt.Fprintln(w, "\nPriorities: offered 3C, half the clients' calls shed.Sheddable, the others shed.Critical; clients honour Retry-After.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| server | Critical goodput (share of Critical demand up to C) | Sheddable goodput (× C) |")
	fmt.Fprintln(w, "|---|---:|---:|")
	for _, r := range res.Priority {
		fmt.Fprintf(w, "| %s | %.3f | %.3f |\n", r.Control.Name, r.Critical, r.Sheddable)
	}
	fmt.Fprintln(w, "\nVariable latency: offered 3C, each request's work a lognormal draw of mean 10 ms; clients honour Retry-After. The unloaded p99 is at C/2 with the same draws.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| work's σ | server | goodput (× C) | shed per success | admitted p99 | unloaded p99 |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|")
	for _, r := range res.Variable {
		fmt.Fprintf(w, "| %.1f | %s | %.3f | %.2f | %s | %s |\n", r.Spread, r.Control.Name, r.Goodput, r.ShedPerSuccess, msec(r.P99), msec(r.UnloadedP99))
	}
	fmt.Fprintln(w, "\nTargets of the adaptive Limiter with clients that honour Retry-After:")
	fmt.Fprintln(w)
	for _, t := range shedTargets(res) {
		met := "met"
		if !t.Met {
			met = "**not met**"
		}
		fmt.Fprintf(w, "- %s: %s (target %s): %s\n", t.Name, t.Got, t.Want, met)
	}
	fmt.Fprintln(w)
}

// shedTarget is one target and what the run measured.
type shedTarget struct {
	Name, Got, Want string
	Met             bool
}

// shedTargets checks the adaptive Limiter with our clients.
func shedTargets(res shedResults) []shedTarget {
	ours := adaptiveOurs(res.Config.Capacity)
	var o shedRow
	for _, r := range res.Overload {
		if r.Control.is(ours) {
			o = r
		}
	}
	var out outageShedRow
	for _, r := range res.Outage {
		if r.Control.is(ours) {
			out = r
		}
	}
	var p priorityRow
	for _, r := range res.Priority {
		if r.Control.is(ours) {
			p = r
		}
	}
	rec := "never"
	if out.Recovered {
		rec = span(out.Recovery)
	}
	return []shedTarget{
		{"goodput at 3C", fmt.Sprintf("%.3f C", o.Goodput), "≥ 0.95 C", o.Goodput >= 0.95},
		{"admitted p99", msec(o.P99), "≤ 2 × " + msec(res.UnloadedP99), o.P99 <= 2*res.UnloadedP99},
		{"shed per success", fmt.Sprintf("%.2f", o.ShedPerSuccess), "≤ 1.1", o.ShedPerSuccess <= 1.1},
		{"arrivals in the first 5 s after the outage", fmt.Sprintf("%.2f C", out.Arrivals5s), "≤ 1.2 C", out.Arrivals5s <= 1.2},
		{"95% of calls succeed within 10 s again after", rec, "≤ 10s", out.Recovered && out.Recovery <= 10*time.Second},
		{"Critical goodput, half the traffic Sheddable", fmt.Sprintf("%.3f", p.Critical), "≥ 0.99", p.Critical >= 0.99},
	}
}

// msec formats d in milliseconds for the tables: "12.3ms", "19.5s".
func msec(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
}

// writeShedCSVs writes the rows of the three tables, and the per-second
// series of the charted runs.
func writeShedCSVs(dir string, res shedResults) error {
	recs := [][]string{{"server", "honours_retry_after", "goodput_per_c", "arrivals_per_c", "shed_per_success", "admitted_p99_ms", "queue_wait_p99_ms", "calls_succeeded", "attempts_abandoned_per_s"}}
	for _, r := range res.Overload {
		recs = append(recs, []string{r.Control.Name, strconv.FormatBool(r.Control.Honour), ftoa(r.Goodput), ftoa(r.Arrivals),
			ftoa(r.ShedPerSuccess), ms(r.P99), ms(r.QueueP99), ftoa(r.Calls), ftoa(r.TimedOut)})
	}
	if err := writeCSV(filepath.Join(dir, "shed.csv"), recs); err != nil {
		return err
	}
	recs = [][]string{{"server", "honours_retry_after", "arrivals_first_5s_per_c", "goodput_first_10s_per_c", "recovered", "recovery_ms"}}
	for _, r := range res.Outage {
		recs = append(recs, []string{r.Control.Name, strconv.FormatBool(r.Control.Honour), ftoa(r.Arrivals5s), ftoa(r.Goodput10s),
			strconv.FormatBool(r.Recovered), ms(r.Recovery)})
	}
	if err := writeCSV(filepath.Join(dir, "shed_outage.csv"), recs); err != nil {
		return err
	}
	recs = [][]string{{"server", "critical_goodput_per_critical_demand", "sheddable_goodput_per_c"}}
	for _, r := range res.Priority {
		recs = append(recs, []string{r.Control.Name, ftoa(r.Critical), ftoa(r.Sheddable)})
	}
	if err := writeCSV(filepath.Join(dir, "shed_priority.csv"), recs); err != nil {
		return err
	}
	recs = [][]string{{"work_sigma", "server", "goodput_per_c", "shed_per_success", "admitted_p99_ms", "unloaded_p99_ms"}}
	for _, r := range res.Variable {
		recs = append(recs, []string{ftoa(r.Spread), r.Control.Name, ftoa(r.Goodput), ftoa(r.ShedPerSuccess), ms(r.P99), ms(r.UnloadedP99)})
	}
	if err := writeCSV(filepath.Join(dir, "shed_variable.csv"), recs); err != nil {
		return err
	}
	recs = [][]string{{"run", "second", "arrivals", "served", "goodput", "shed", "abandoned", "calls", "calls_succeeded", "limit", "queued"}}
	for _, s := range shedSeries(res) {
		for i, b := range s.rec.Seconds {
			recs = append(recs, []string{s.name, strconv.Itoa(i), strconv.Itoa(b.Arrivals), strconv.Itoa(b.Served), strconv.Itoa(b.Good),
				strconv.Itoa(b.Shed), strconv.Itoa(b.TimedOut), strconv.Itoa(b.Calls), strconv.Itoa(b.Succeeded), strconv.Itoa(b.Limit), strconv.Itoa(b.Queued)})
		}
	}
	return writeCSV(filepath.Join(dir, "shed_series.csv"), recs)
}

// series is one charted run.
type series struct {
	name string
	rec  *shedRecorder
}

func shedSeries(res shedResults) []series {
	return []series{
		{"overload 3C, no shedding", res.NoShed},
		{"overload 3C, adaptive Limiter", res.Samples[0]},
		{"outage, adaptive Limiter", res.Samples[1]},
		{"priorities, adaptive Limiter", res.Samples[2]},
		{"outage, no shedding", res.NoShedOutage},
	}
}
