package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
)

// logStorm is the log scenario: requests against one origin that fails
// every attempt with a 503, through a real retryhttp.Transport with a
// Logger and the default LogSampling, on a fake clock. Rate requests a
// second for Burst, then Trickle a second until Length: the outage goes on,
// with fewer callers left (a hundredth of Rate, by default).
type logStorm struct {
	Rate, Trickle int
	Burst, Length time.Duration
	Attempts      int
}

func defaultLogStorm(rate int) logStorm {
	return logStorm{Rate: rate, Trickle: max(rate/100, 1), Burst: time.Minute, Length: 5 * time.Minute, Attempts: 4}
}

// logResult is what the Logger got.
type logResult struct {
	Requests int
	Events   int   // lines the Transport would write unsampled: one per retry, one per give-up
	PerMin   []int // lines written in each minute
	Summary  int   // of them, "suppressed N similar" lines
	// Suppressed is the sum of the summaries' counts: the lines written
	// plus it equal Events once every summary due is written.
	Suppressed int
	Written    int
}

// simulateLogs runs the log scenario. Each request runs at its own instant
// of the fake clock, and its waits are skipped (the clock ends them at
// once without moving): its lines carry the time it started, which, at
// minutes per sampling window, changes nothing that is counted here.
func simulateLogs(c logStorm) (logResult, error) {
	if c.Rate < 1 || c.Trickle < 1 || c.Burst <= 0 || c.Length < c.Burst || c.Attempts < 1 {
		return logResult{}, fmt.Errorf("logs: rate %d, trickle %d, burst %v, length %v, attempts %d: want positive values and length ≥ burst",
			c.Rate, c.Trickle, c.Burst, c.Length, c.Attempts)
	}
	clk := &stepClock{}
	res := logResult{PerMin: make([]int, int((c.Length+time.Minute-1)/time.Minute)+1)}
	h := &lineCounter{clk: clk, res: &res}
	tr := &retryhttp.Transport{
		Base:   failing{},
		Policy: retry.Policy{MaxAttempts: c.Attempts, Clock: clk},
		Logger: slog.New(h),
	}
	req, err := http.NewRequest(http.MethodGet, "https://api.example/v1/items", nil)
	if err != nil {
		return logResult{}, err
	}
	at := func(t time.Duration) {
		clk.set(t)
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
		res.Requests++
		res.Events += c.Attempts // Attempts−1 retries and a give-up
	}
	for i := range int(c.Burst.Seconds() * float64(c.Rate)) {
		at(time.Duration(i) * time.Second / time.Duration(c.Rate))
	}
	for t := c.Burst; t < c.Length; t += time.Second / time.Duration(c.Trickle) {
		at(t)
	}
	// One more request, a sampling window later, writes the summaries
	// still due; its own lines are not counted.
	events := res.Events
	h.flushing = true
	at(c.Length + time.Minute)
	res.Requests--
	res.Events = events
	return res, nil
}

// failing answers every request with a 503.
type failing struct{}

func (failing) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable",
		Header: http.Header{}, Body: http.NoBody, Request: req, ProtoMajor: 1, ProtoMinor: 1}, nil
}

// stepClock is a retry.Clock whose time the driver sets, and whose waits
// end at once.
type stepClock struct{ now atomic.Int64 }

var logEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *stepClock) set(d time.Duration) { c.now.Store(int64(d)) }
func (c *stepClock) elapsed() time.Duration {
	return time.Duration(c.now.Load())
}
func (c *stepClock) Now() time.Time { return logEpoch.Add(c.elapsed()) }

func (c *stepClock) WithTimeout(parent context.Context, _ time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	cancel()
	return ctx, cancel
}

func (c *stepClock) WithDeadline(parent context.Context, _ time.Time) (context.Context, context.CancelFunc) {
	return context.WithCancel(parent) // the scenario sets no deadline
}

// lineCounter is a slog.Handler that counts lines per minute of the fake
// clock.
type lineCounter struct {
	clk      *stepClock
	res      *logResult
	flushing bool // the last request's own lines are not counted
}

func (*lineCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *lineCounter) Handle(_ context.Context, r slog.Record) error {
	m := int(h.clk.elapsed() / time.Minute)
	if m < len(h.res.PerMin) {
		h.res.PerMin[m]++
	}
	if !strings.Contains(r.Message, "suppressed") {
		if !h.flushing {
			h.res.Written++
		}
		return nil
	}
	h.res.Summary++
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "suppressed" {
			h.res.Suppressed += int(a.Value.Int64())
		}
		return true
	})
	return nil
}
func (h *lineCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *lineCounter) WithGroup(string) slog.Handler      { return h }
