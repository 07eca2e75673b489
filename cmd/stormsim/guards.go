package main

import (
	"fmt"
	"io"
	"path/filepath"
)

// guardsConfig says which guarded scenarios to run, and how big.
type guardsConfig struct {
	Outage, Overload, Light, LowTraffic, Probes, Logs bool

	Seed    uint64
	Clients int // callers of the hard outage, overload, light failure and breaker scenarios
	LogRate int // requests per second of the log scenario's first minute
	Runs    int // runs per row of the hard outage, the overload and low traffic
}

// any reports whether c runs a scenario at all.
func (c guardsConfig) any() bool {
	return c.Outage || c.Overload || c.Light || c.LowTraffic || c.Probes || c.Logs
}

// runGuards runs the guarded scenarios c asks for, prints their tables to
// stdout and writes their CSV files and charts into dir.
func runGuards(c guardsConfig, stdout, stderr io.Writer, dir string) error {
	sized := func(l load) load {
		l.Clients = c.Clients
		return l
	}
	if c.Outage {
		l := sized(outageLoad(c.Seed))
		rows, runs, err := simulateOutage(l, guardControls(), c.Runs)
		if err != nil {
			return fmt.Errorf("hard outage: %w", err)
		}
		writeOutageTable(stdout, l, rows, c.Runs)
		err = writeFiles(stderr, dir,
			file{"outage.csv", func() error { return writeOutageCSV(filepath.Join(dir, "outage.csv"), rows) }},
			file{"outage_series.csv", func() error { return writeSeriesCSV(filepath.Join(dir, "outage_series.csv"), l, runs) }},
			file{"outage.png, .svg", func() error { return writeOutageChart(dir, l, runs) }},
		)
		if err != nil {
			return err
		}
	}
	if c.Overload {
		l := sized(overloadLoad(c.Seed))
		rows, runs, err := simulateOverload(l, guardControls(), c.Runs)
		if err != nil {
			return fmt.Errorf("overload: %w", err)
		}
		writeOverloadTable(stdout, l, rows, c.Runs)
		err = writeFiles(stderr, dir,
			file{"overload.csv", func() error { return writeOverloadCSV(filepath.Join(dir, "overload.csv"), rows) }},
			file{"overload_series.csv", func() error { return writeSeriesCSV(filepath.Join(dir, "overload_series.csv"), l, runs) }},
			file{"overload.png, .svg", func() error { return writeOverloadChart(dir, l, runs) }},
		)
		if err != nil {
			return err
		}
	}
	if c.Light {
		l := sized(lightLoad(c.Seed))
		rows, err := simulateLight(l)
		if err != nil {
			return fmt.Errorf("light failure: %w", err)
		}
		writeLightTable(stdout, l, rows)
	}
	if c.LowTraffic {
		l := lowTrafficLoad(c.Seed) // its 10 callers are the point: -guard-clients does not size it
		rows, err := simulateLowTraffic(l, lowTrafficControls(), c.Runs)
		if err != nil {
			return fmt.Errorf("low traffic: %w", err)
		}
		writeLowTrafficTable(stdout, l, rows, c.Runs)
	}
	if c.Probes {
		l := sized(probeLoad(c.Seed))
		res, err := simulateProbes(l)
		if err != nil {
			return fmt.Errorf("breaker with retries: %w", err)
		}
		writeProbeTable(stdout, l, res)
	}
	if c.Logs {
		ls := defaultLogStorm(c.LogRate)
		res, err := simulateLogs(ls)
		if err != nil {
			return err
		}
		writeLogTable(stdout, ls, res)
	}
	return nil
}
