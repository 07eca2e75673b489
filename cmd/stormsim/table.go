package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stormguard/retry"
)

// writeStormTable prints scenario A's rows with a header that states the
// model, so that the table can be read, and pasted, on its own.
func writeStormTable(w io.Writer, cfg stormConfig, rows []stormRow) error {
	p := cfg.Policy
	fmt.Fprintf(w, "Scenario A: retry storm. %d clients lose the network together at t=0; it returns at %v.\n",
		cfg.Clients, cfg.Outage)
	fmt.Fprintf(w, "The server accepts %d attempts per %v window and fails the rest. Each client retries with\n",
		cfg.Capacity, cfg.Window)
	fmt.Fprintf(w, "MaxAttempts %d and waits of %s, jittered; \"budget\" rows share\n",
		p.MaxAttempts, describeWaits(p))
	fmt.Fprintf(w, "guard.NewBudget(guard.BudgetOptions{MaxTokens: %g, TokenRatio: %g}) among all clients. Means of %d runs (seed %d).\n\n",
		cfg.BudgetTokens, cfg.BudgetRatio, cfg.Runs, cfg.Seed)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tbudget\tpeak per window\tworst peak\tcalls\tall done after\tgave up\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%d\t%.1f\t%s\t%.1f\t\n",
			r.Strategy, yesNo(r.Budget), r.Peak, r.MaxPeak, r.Calls, seconds(r.Done), r.GaveUp)
	}
	return tw.Flush()
}

// writeContentionTable prints scenario B as two grids, write calls and
// completion time, with a row per N and a column per strategy, as the
// post's charts have a line per strategy.
func writeContentionTable(w io.Writer, cfg contentionConfig, points []contentionPoint) error {
	fmt.Fprintf(w, "Scenario B: optimistic-concurrency contention (AWS Architecture Blog, 2015). N clients each\n")
	fmt.Fprintf(w, "read a row's version and write it back if unchanged, backing off before retry n by\n")
	fmt.Fprintf(w, "min(%d, %d·2ⁿ) jittered; each hop takes |Normal(%d, %d)| time units. Means of %d runs (seed %d).\n",
		cfg.Cap/unit, cfg.Base/unit, cfg.HopMean/unit, cfg.HopDev/unit, cfg.Runs, cfg.Seed)

	names, grid := contentionGrid(points)
	for _, metric := range []struct {
		title string
		value func(contentionPoint) string
	}{
		{"write calls", func(p contentionPoint) string { return fmt.Sprintf("%.0f", p.Calls) }},
		{"completion time (time units)", func(p contentionPoint) string { return fmt.Sprintf("%.0f", float64(p.Time)/float64(unit)) }},
	} {
		fmt.Fprintf(w, "\n%s\n", metric.title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "N\t%s\t\n", strings.Join(names, "\t"))
		for _, n := range cfg.Clients {
			fmt.Fprintf(tw, "%d", n)
			for _, p := range grid[n] {
				fmt.Fprintf(tw, "\t%s", metric.value(p))
			}
			fmt.Fprintln(tw, "\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// contentionGrid returns the strategies in their order of appearance and,
// for each N, its points in that order.
func contentionGrid(points []contentionPoint) (names []string, grid map[int][]contentionPoint) {
	grid = make(map[int][]contentionPoint)
	for _, p := range points {
		if len(names) == 0 || names[len(names)-1] != p.Strategy {
			names = append(names, p.Strategy)
		}
		grid[p.Clients] = append(grid[p.Clients], p)
	}
	return names, grid
}

// describeWaits says what waits p makes before jitter, as the library
// computes them: reading them through Policy.Wait shows the defaults that
// the zero fields stand for without copying them here.
func describeWaits(p retry.Policy) string {
	p.Jitter = retry.NoJitter
	first, second, most := p.Wait(1, 0, 0), p.Wait(2, 0, 0), p.Wait(1000, 0, 0)
	return fmt.Sprintf("%v·%g^(n−1) capped at %v", first, float64(second)/float64(first), most)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// seconds formats d as seconds with two decimals, a width that lines up.
func seconds(d time.Duration) string {
	return fmt.Sprintf("%.2fs", d.Seconds())
}
