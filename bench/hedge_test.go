package bench_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryhttp"
)

// The tail-latency proof of hedging ("The Tail at Scale", Dean and
// Barroso, 2013): a loopback server answers in 1–2ms, but 2% of requests
// stall 300ms. 2,000 GETs from 8 goroutines, without and with an adaptive
// Hedger (the p90 of recent latencies, within [1ms, 50ms], up to 3 copies
// in flight, hedges for at most 10% of calls, sharing NewBudget(50, 0.1)), report p50/p99/p99.9 and how many
// requests the server saw. A third run stalls every request, to show that
// the Budget bounds the extra requests when hedging cannot help: to about
// maxTokens/2 plus tokenRatio per success (200 requests there: at 300ms
// each, 2,000 would take over a minute).
//
//	go test -run='^$' -bench='^BenchmarkHedgeTail$' -benchtime=1x .
//
// With HEDGE_CHART set to a directory, it also writes hedging.svg there:
// the latency distribution of both runs.

const (
	tailRequests = 2000
	tailWorkers  = 8
	tailStall    = 300 * time.Millisecond
)

type tailRun struct {
	latencies []time.Duration // sorted
	served    int64           // requests the server saw
}

func (r tailRun) quantile(q float64) time.Duration {
	return r.latencies[min(int(q*float64(len(r.latencies))), len(r.latencies)-1)]
}

// runTail sends the workload through client to a server that stalls a
// share of its requests, and returns what it measured.
func runTail(b *testing.B, client *http.Client, requests int, stallShare float64) tailRun {
	b.Helper()
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		d := time.Millisecond + rand.N(time.Millisecond)
		if rand.Float64() < stallShare {
			d = tailStall
		}
		select {
		case <-time.After(d):
			w.WriteHeader(http.StatusOK)
		case <-r.Context().Done(): // a hedge won
		}
	}))
	defer srv.Close()
	defer client.CloseIdleConnections()

	lat := make([]time.Duration, requests)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range tailWorkers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(requests); i = next.Add(1) - 1 {
				start := time.Now()
				resp, err := client.Get(srv.URL)
				if err != nil {
					b.Error(err)
					return
				}
				resp.Body.Close()
				lat[i] = time.Since(start)
			}
		})
	}
	wg.Wait()
	slices.Sort(lat)
	return tailRun{latencies: lat, served: served.Load()}
}

func BenchmarkHedgeTail(b *testing.B) {
	newClient := func(hedge bool) *http.Client {
		tr := &retryhttp.Transport{Base: &http.Transport{MaxIdleConnsPerHost: 2 * tailWorkers}}
		if hedge {
			budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 50, TokenRatio: 0.1})
			if err != nil {
				b.Fatal(err)
			}
			// MaxFraction matches the p90: about 10% of calls pass it.
			tr.Hedger = &retry.Hedger{Quantile: 0.9, MinDelay: time.Millisecond, MaxDelay: 50 * time.Millisecond, MaxInFlight: 3, MaxFraction: 0.1}
			tr.Policy.Budget = budget
		}
		return &http.Client{Transport: tr}
	}
	runs := map[string]tailRun{}
	for _, sc := range []struct {
		name     string
		hedge    bool
		requests int
		stall    float64
	}{
		{"plain", false, tailRequests, 0.02},
		{"hedged", true, tailRequests, 0.02},
		// Every request stalls: hedging cannot help, and the Budget keeps
		// it from doubling the load. Fewer requests, or it takes a minute.
		{"hedged-every-request-stalls", true, tailRequests / 10, 1},
	} {
		b.Run(sc.name, func(b *testing.B) {
			var r tailRun
			for range b.N {
				r = runTail(b, newClient(sc.hedge), sc.requests, sc.stall)
			}
			runs[sc.name] = r
			b.ReportMetric(float64(r.quantile(0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(r.quantile(0.99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(r.quantile(0.999).Microseconds())/1000, "p99.9-ms")
			b.ReportMetric(100*float64(r.served-int64(sc.requests))/float64(sc.requests), "extra-%")
			b.ReportMetric(0, "ns/op") // the latencies are the result, not the loop's time
		})
	}
	if dir := os.Getenv("HEDGE_CHART"); dir != "" && len(runs) == 3 {
		if err := os.WriteFile(filepath.Join(dir, "hedging.svg"), []byte(tailChart(runs["plain"], runs["hedged"])), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// tailChart draws the latency distribution of both runs as an SVG: for
// each latency on a log axis, the share of requests that took at least
// that long, on a log axis too, so that the tail is as visible as the body.
func tailChart(plain, hedged tailRun) string {
	const w, h, left, bottom, top, right = 720.0, 420.0, 70.0, 50.0, 40.0, 20.0
	xmin, xmax := 0.5, 1000.0 // ms
	ymin, ymax := 0.0005, 1.0 // share of requests at least this slow
	x := func(ms float64) float64 {
		return left + (w-left-right)*(math.Log10(max(ms, xmin))-math.Log10(xmin))/(math.Log10(xmax)-math.Log10(xmin))
	}
	y := func(share float64) float64 {
		return top + (h-top-bottom)*(math.Log10(ymax)-math.Log10(max(share, ymin)))/(math.Log10(ymax)-math.Log10(ymin))
	}
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif" font-size="12">`, w, h)
	fmt.Fprintf(&s, `<rect width="100%%" height="100%%" fill="white"/>`)
	fmt.Fprintf(&s, `<text x="%g" y="22" font-size="14">Latency of 2,000 GETs, 2%% of requests stalled 300ms: share of requests at least this slow</text>`, left)
	for _, ms := range []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000} {
		fmt.Fprintf(&s, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#ddd"/><text x="%.1f" y="%g" text-anchor="middle">%gms</text>`,
			x(ms), top, x(ms), h-bottom, x(ms), h-bottom+16, ms)
	}
	for _, share := range []float64{1, 0.1, 0.01, 0.001} {
		fmt.Fprintf(&s, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/><text x="%g" y="%.1f" text-anchor="end">%g%%</text>`,
			left, y(share), w-right, y(share), left-6, y(share)+4, share*100)
	}
	var legend strings.Builder
	curve := func(r tailRun, color, label string, ly float64) {
		var pts []string
		n := float64(len(r.latencies))
		for i, d := range r.latencies {
			ms := float64(d.Microseconds()) / 1000
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(ms), y((n-float64(i))/n)))
		}
		fmt.Fprintf(&s, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, color, strings.Join(pts, " "))
		fmt.Fprintf(&legend, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"/><text x="%g" y="%g">%s: p50 %v, p99 %v, p99.9 %v; the server saw %d requests</text>`,
			left+10, ly, left+30, ly, color, left+35, ly+4, label, r.quantile(0.5).Round(10*time.Microsecond), r.quantile(0.99).Round(10*time.Microsecond),
			r.quantile(0.999).Round(10*time.Microsecond), r.served)
	}
	curve(plain, "#c0392b", "plain", h-bottom-40)
	curve(hedged, "#2471a3", "hedged", h-bottom-20)
	// The legend, bottom left, on a white ground over the curves.
	fmt.Fprintf(&s, `<rect x="%g" y="%g" width="480" height="44" fill="white" fill-opacity="0.9"/>`, left+4, h-bottom-52)
	s.WriteString(legend.String())
	s.WriteString(`</svg>`)
	return s.String()
}
