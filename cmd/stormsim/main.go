// Command stormsim simulates retry storms in virtual time, with the retry
// library's own jitters and wait formula, and writes tables, CSV files and
// charts of the results.
//
// Scenario A is the outage storm: clients that lose the network together
// and come back to a server with little capacity, for each jitter, with and
// without a shared retry budget. Scenario B is the optimistic-concurrency
// experiment of the AWS Architecture Blog post "Exponential Backoff And
// Jitter" (2015). The guarded scenarios (outage, overload, light,
// lowtraffic, probes, logs) put a shared Budget, Throttle or Breaker in
// front of a backend that is down, overloaded or slightly flaky, or that
// sees 10 calls an hour, and run every call through a real
// retry.Do in virtual time; logs sends a failing origin's requests through
// a retryhttp.Transport with a sampled Logger. The shed scenario puts the
// server side in front of a server of limited capacity: no shedding, a
// fixed limit, or package shed's adaptive Limiter (its own engine), against
// clients that honour its Retry-After or ignore it. Nothing sleeps: a run is a
// loop over an event queue, and the same seed gives the same numbers (the
// Throttle's refusals are drawn from a seeded ThrottleOptions.Rand).
//
// Usage, from this directory:
//
//	go run .                        # both scenarios, defaults, into ./out
//	go run . -scenario a -clients 50 -outage 2s
//	go run . -scenario b -n 10:100:10 -runs 20
//	go run . -out ../../docs/stormsim
//	go run . -scenario guards -out ../../docs/stormsim   # outage, overload, light, lowtraffic, probes, logs
//	go run . -scenario shed -out ../../docs/stormsim     # server-side shedding
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "stormsim:", err)
		os.Exit(2)
	}
}

// run is the whole command: it parses args, runs the chosen scenarios,
// prints their tables to stdout and writes CSV files and charts to the
// output folder. Progress and the list of files written go to stderr.
func run(args []string, stdout, stderr io.Writer) error {
	a, b := defaultStorm(), defaultContention()
	fs := flag.NewFlagSet("stormsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenario := fs.String("scenario", "all", "which scenarios to run, comma-separated: a, b, outage, overload, light, lowtraffic, probes, logs, guards (those six), shed or all")
	out := fs.String("out", "out", "folder for the CSV files and the charts (created if missing)")
	seed := fs.Uint64("seed", 1, "seed of the random streams; the same seed gives the same numbers")
	runs := fs.Int("runs", 100, "runs per row (A) and per N and strategy (B)")
	fs.IntVar(&a.Clients, "clients", a.Clients, "A: clients that lose the network together")
	fs.DurationVar(&a.Outage, "outage", a.Outage, "A: how long the network stays down")
	fs.IntVar(&a.Capacity, "capacity", a.Capacity, "A: attempts the server accepts per window")
	fs.DurationVar(&a.Window, "window", a.Window, "A: the server's rate window")
	fs.IntVar(&a.Policy.MaxAttempts, "attempts", a.Policy.MaxAttempts, "A: MaxAttempts of each client")
	fs.Float64Var(&a.BudgetTokens, "budget-tokens", a.BudgetTokens, "A: maxTokens of the shared budget")
	fs.Float64Var(&a.BudgetRatio, "budget-ratio", a.BudgetRatio, "A: tokenRatio of the shared budget")
	ns := fs.String("n", "10:190:10", "B: client counts, as from:to:step or a comma-separated list")
	fs.IntVar(&b.Workers, "workers", b.Workers, "B: goroutines that share the runs (results do not depend on it)")
	g := guardsConfig{Clients: 1000, LogRate: 10_000, Runs: 5}
	fs.IntVar(&g.Runs, "guard-runs", g.Runs, "outage, overload, lowtraffic: runs per row, seeds seed..seed+runs-1 (their mean, or sum, is shown)")
	fs.IntVar(&g.Clients, "guard-clients", g.Clients, "outage, overload, light, probes: callers sharing one Policy")
	fs.IntVar(&g.LogRate, "log-rate", g.LogRate, "logs: failing requests per second in the first minute")
	sc := defaultShedConfig()
	fs.IntVar(&sc.Clients, "shed-clients", sc.Clients, "shed: clients, each a process of its own")
	fs.IntVar(&sc.Capacity, "shed-capacity", sc.Capacity, "shed: C, the requests the server works on at once (10 ms each)")
	fs.DurationVar(&sc.Length, "shed-length", sc.Length, "shed: length of the overload and priority runs")
	fs.DurationVar(&sc.Hang, "shed-outage", sc.Hang, "shed: how long the server's work stops in the outage")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	a.Seed, b.Seed, a.Runs, b.Runs = *seed, *seed, *runs, *runs
	var err error
	if b.Clients, err = parseCounts(*ns); err != nil {
		return fmt.Errorf("-n: %w", err)
	}
	var doA, doB, doShed bool
	for _, name := range strings.Split(*scenario, ",") {
		switch strings.TrimSpace(name) {
		case "a":
			doA = true
		case "b":
			doB = true
		case "outage":
			g.Outage = true
		case "overload":
			g.Overload = true
		case "light":
			g.Light = true
		case "lowtraffic":
			g.LowTraffic = true
		case "probes":
			g.Probes = true
		case "logs":
			g.Logs = true
		case "shed":
			doShed = true
		case "guards":
			g.Outage, g.Overload, g.Light, g.LowTraffic, g.Probes, g.Logs = true, true, true, true, true, true
		case "all":
			doA, doB, doShed = true, true, true
			g.Outage, g.Overload, g.Light, g.LowTraffic, g.Probes, g.Logs = true, true, true, true, true, true
		default:
			return fmt.Errorf("-scenario %q: want a comma-separated list of a, b, outage, overload, light, lowtraffic, probes, logs, guards, shed, all", *scenario)
		}
	}
	if g.Clients < 1 || g.LogRate < 1 || g.Runs < 1 {
		return fmt.Errorf("-guard-clients %d, -log-rate %d, -guard-runs %d: want at least 1", g.Clients, g.LogRate, g.Runs)
	}
	g.Seed, sc.Seed = *seed, *seed
	if sc.Clients < 1 || sc.Capacity < 1 || sc.Length < 6*time.Second || sc.Hang < 0 {
		return fmt.Errorf("-shed-clients %d, -shed-capacity %d, -shed-length %v, -shed-outage %v: want at least 1, 1, 6s and 0", sc.Clients, sc.Capacity, sc.Length, sc.Hang)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}

	start := time.Now()
	dir := *out
	if doA {
		rows, err := simulateStorm(a)
		if err != nil {
			return err
		}
		if err := writeStormTable(stdout, a, rows); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
		err = writeFiles(stderr, dir,
			file{"storm.csv", func() error { return writeStormCSV(filepath.Join(dir, "storm.csv"), rows) }},
			file{"storm_arrivals.csv", func() error { return writeArrivalsCSV(filepath.Join(dir, "storm_arrivals.csv"), a, rows) }},
			file{"storm_arrivals.png, .svg", func() error { return writeStormChart(dir, a, rows) }},
		)
		if err != nil {
			return err
		}
	}
	if doB {
		points, err := simulateContention(b, stderr)
		if err != nil {
			return err
		}
		if err := writeContentionTable(stdout, b, points); err != nil {
			return err
		}
		err = writeFiles(stderr, dir,
			file{"contention.csv", func() error { return writeContentionCSV(filepath.Join(dir, "contention.csv"), points) }},
			file{"contention_calls.png, .svg, contention_time.png, .svg", func() error { return writeContentionCharts(dir, b, points) }},
		)
		if err != nil {
			return err
		}
	}
	if g.any() {
		if err := runGuards(g, stdout, stderr, dir); err != nil {
			return err
		}
	}
	if doShed {
		res, err := simulateShed(sc)
		if err != nil {
			return fmt.Errorf("shed: %w", err)
		}
		writeShedTables(stdout, res)
		err = writeFiles(stderr, dir,
			file{"shed.csv, shed_outage.csv, shed_priority.csv, shed_variable.csv, shed_series.csv", func() error { return writeShedCSVs(dir, res) }},
			file{"shed_overload.png, .svg, shed_outage.png, .svg", func() error { return writeShedCharts(dir, res) }},
		)
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "done in %.1fs\n", time.Since(start).Seconds())
	return nil
}

// file is an output file, or a group of them, and how to write it.
type file struct {
	name  string
	write func() error
}

// writeFiles writes files into dir and lists them on log.
func writeFiles(log io.Writer, dir string, files ...file) error {
	for _, f := range files {
		if err := f.write(); err != nil {
			return fmt.Errorf("writing %s: %w", f.name, err)
		}
		fmt.Fprintf(log, "wrote %s\n", filepath.Join(dir, f.name))
	}
	return nil
}

// parseCounts reads -n: "from:to:step" or "n1,n2,…".
func parseCounts(s string) ([]int, error) {
	if parts := strings.Split(s, ":"); len(parts) == 3 {
		var v [3]int
		for i, p := range parts {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil {
				return nil, err
			}
			v[i] = n
		}
		from, to, step := v[0], v[1], v[2]
		if from < 1 || to < from || step < 1 {
			return nil, fmt.Errorf("%q: want 1 ≤ from ≤ to and step ≥ 1", s)
		}
		var ns []int
		for n := from; n <= to; n += step {
			ns = append(ns, n)
		}
		return ns, nil
	}
	var ns []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return nil, err
		}
		if n < 1 {
			return nil, fmt.Errorf("%d clients: want at least 1", n)
		}
		ns = append(ns, n)
	}
	return ns, nil
}
