// Command gameday runs a game day on the orders service of
// examples/orders, in one process, on loopback: the faults that a document
// declares for its "orders" policy (20% of requests answered 503, 200 ms
// added to 10%, and 5% of the rest answered and then lost, the connection
// closed after the order was made) are armed by a chaos switch in front of
// the shop, behind which the idempotency middleware saves each answer.
// Users place orders; each order they are told of is shipped through an
// outbox. It runs once with the library's retries (retryhttp with
// AutoIdempotencyKey and a retry budget; the outbox's own) and once with
// one attempt each, and prints, for both, the share of user calls that
// succeeded, their p99 latency, and the orders and shipments made twice,
// which must be 0.
//
//	go run ./examples/gameday
//	go run ./examples/gameday -orders 2000 -seed 7
//
// The faults are drawn from the seed, so that a run can be repeated; the
// users run concurrently, so which order gets which fault, and the numbers
// with it, move a little from run to run.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	opt := options{}
	flag.IntVar(&opt.Orders, "orders", 400, "orders to place")
	flag.IntVar(&opt.Clients, "clients", 8, "users placing them at once")
	flag.Int64Var(&opt.Seed, "seed", 1, "seed of the faults")
	flag.Float64Var(&opt.LatencyScale, "latency-scale", 1, "scale of the added latency (1: 200ms)")
	flag.Parse()
	if err := gameDay(context.Background(), os.Stdout, opt); err != nil {
		log.Fatal(err)
	}
}

// gameDay runs opt with and without retries and prints what they did.
func gameDay(ctx context.Context, w io.Writer, opt options) error {
	if opt.Orders < 1 || opt.Clients < 1 || !(opt.LatencyScale >= 0) {
		return fmt.Errorf("gameday: -orders and -clients must be positive, -latency-scale not negative")
	}
	start := time.Now()
	var rs [2]result
	for i, retries := range []bool{true, false} {
		o := opt
		o.Retries = retries
		r, err := run(ctx, o)
		if err != nil {
			return err
		}
		rs[i] = r
	}
	fmt.Fprintf(w, "Game day: %d orders from %d users, seed %d, latency x%g.\n", opt.Orders, opt.Clients, opt.Seed, opt.LatencyScale)
	fmt.Fprintf(w, "%-28s %22s %14s\n", "", "with retries", "without")
	row := func(name string, f func(r result) string) {
		fmt.Fprintf(w, "%-28s %22s %14s\n", name, f(rs[0]), f(rs[1]))
	}
	row("user calls succeeded", func(r result) string { return pct(r.Succeeded, r.Calls) })
	row("why the failed calls stopped", func(r result) string { return why(r) })
	row("p99 latency of user calls", func(r result) string { return r.P99.Round(time.Millisecond).String() })
	row("orders made twice", func(r result) string { return fmt.Sprint(r.OrdersTwice) })
	row("shipments delivered", func(r result) string { return pct(r.Shipped, r.Shipments) })
	row("shipments dead-lettered", func(r result) string { return fmt.Sprint(r.DeadLetters) })
	row("shipments made twice", func(r result) string { return fmt.Sprint(r.ShippedTwice) })
	for i, f := range rs[0].Faults { // the same names, in the same order, in both
		row("fault "+f.Name, func(r result) string { return fmt.Sprintf("%d of %d", r.Faults[i].Injected, r.Faults[i].Requests) })
	}
	fmt.Fprintf(w, "Done in %v.\n", time.Since(start).Round(time.Millisecond))
	return nil
}

func pct(n, of int) string {
	if of == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}

// why says why the retries of the failed calls stopped: "budget 2".
func why(r result) string {
	if r.Succeeded == r.Calls {
		return "–"
	}
	if len(r.Why) == 0 {
		return "no retries"
	}
	var parts []string
	for _, reason := range slices.Sorted(maps.Keys(r.Why)) {
		parts = append(parts, fmt.Sprintf("%s: %d", reason, r.Why[reason]))
	}
	return strings.Join(parts, ", ")
}
