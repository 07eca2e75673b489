package guard

import (
	"cmp"
	"time"

	"github.com/stormguard/retry/internal/coarse"
)

// The defaults of a ratio budget: those of Finagle's RetryBudget
// (percentCanRetry 20%, minRetriesPerSec 10, ttl 10 s).
const (
	defaultRetryRatio        = 0.2
	defaultRetryMinPerSecond = 10
	defaultRetryTTL          = 10 * time.Second
)

// The bounds of a ratio budget's options. They keep each count of a
// window bucket far below the 2³² it holds: a day's TTL cut in sixteen at
// a million retries a second is 5.4e9 a bucket only for a client that
// sends them all, and no real one does.
const (
	maxRetryRatio        = 1000
	maxRetryMinPerSecond = 1e6
	minRetryTTL          = time.Millisecond
	maxRetryTTL          = 24 * time.Hour
)

// resolveRatio is resolve for the options of a ratio budget.
func (o BudgetOptions) resolveRatio() (BudgetOptions, error) {
	if o.MaxTokens != 0 || o.TokenRatio != 0 {
		return o, invalid("BudgetOptions.MaxTokens %v and TokenRatio %v are a token bucket's, Ratio, MinPerSecond and TTL a ratio budget's: set one kind", o.MaxTokens, o.TokenRatio)
	}
	o.Ratio = cmp.Or(o.Ratio, defaultRetryRatio)
	o.MinPerSecond = cmp.Or(o.MinPerSecond, defaultRetryMinPerSecond)
	o.TTL = cmp.Or(o.TTL, defaultRetryTTL)
	switch {
	case !(o.Ratio > 0 && o.Ratio <= maxRetryRatio):
		return o, invalid("BudgetOptions.Ratio %v is not in (0, %v]", o.Ratio, maxRetryRatio)
	case !(o.MinPerSecond > 0 && o.MinPerSecond <= maxRetryMinPerSecond):
		return o, invalid("BudgetOptions.MinPerSecond %v is not in (0, %v]", o.MinPerSecond, maxRetryMinPerSecond)
	case o.TTL < minRetryTTL || o.TTL > maxRetryTTL:
		return o, invalid("BudgetOptions.TTL %v is not in [%v, %v]", o.TTL, minRetryTTL, maxRetryTTL)
	}
	return o, nil
}

// ratioBudget is the state of a ratio Budget: the attempts sent in the
// last TTL, in the sliding window every guard of this package counts in.
// It counts at the times it is told, not at the outcomes, so a first
// attempt costs one atomic add (and the coarse clock's two loads), and
// only a retry reads the whole window.
type ratioBudget struct {
	ratio   float64       // retries allowed per first attempt
	reserve float64       // retries allowed per window whatever the traffic: MinPerSecond × TTL
	width   int64         // of a window bucket, in nanoseconds
	clk     Clock         // nil: the real clock, read through coarse
	coarse  *coarse.Clock // the real clock, read once per tick; nil on an injected Clock

	// w counts, as its total, the attempts sent, first attempts and
	// retries, and, as its marked part, the retries.
	w window
}

// newRatioClock is the real clock of ratio budgets of TTL ttl: read once
// per quarter bucket, at most coarse.MaxTick.
func newRatioClock(ttl time.Duration) *coarse.Clock {
	return &coarse.Clock{Tick: time.Duration(bucketWidth(ttl) / 4)}
}

// newRatioBudget makes the state of a ratio budget of the resolved o, on
// the real clock c if o has no Clock and c is not nil.
func newRatioBudget(o BudgetOptions, c *coarse.Clock) *ratioBudget {
	r := &ratioBudget{ratio: o.Ratio, reserve: o.MinPerSecond * o.TTL.Seconds(), width: bucketWidth(o.TTL), clk: o.Clock}
	if r.clk == nil {
		r.coarse = c
		if r.coarse == nil {
			r.coarse = newRatioClock(o.TTL)
		}
	}
	return r
}

// nowNs is the time, in UnixNano, on the budget's clock.
func (r *ratioBudget) nowNs() int64 {
	if r.coarse != nil {
		return r.coarse.Nanos()
	}
	return coarse.Nanos(r.clk.Now())
}

// count counts an attempt sent now: a retry (retry 1) or a first attempt
// (retry 0).
func (r *ratioBudget) count(retry uint64) {
	r.w.addIn(r.w.epochNs(r.nowNs(), r.width), 1, retry)
}

// counts returns the first attempts and the retries of the window that
// ends now.
func (r *ratioBudget) counts() (firsts, retries float64) {
	total, marked := r.w.sum(coarse.Time(r.nowNs()), r.width)
	return float64(total - marked), float64(marked)
}

// allow reports whether one more retry fits: the retries of the window,
// it included, at most ratio times its first attempts plus the reserve.
// Two callers that ask at once may both be allowed the last one: the
// window is counted without a lock, and a budget is a bound on load, not
// a ledger.
func (r *ratioBudget) allow() bool {
	firsts, retries := r.counts()
	return retries+1 <= r.ratio*firsts+r.reserve
}

// left is how many retries would be allowed now.
func (r *ratioBudget) left() float64 {
	firsts, retries := r.counts()
	return max(r.ratio*firsts+r.reserve-retries, 0)
}
