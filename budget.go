package retry

import (
	"cmp"
	"fmt"
	"math"
	"sync/atomic"
)

// Default size of the zero Budget.
const (
	defaultBudgetTokens = 10
	defaultBudgetRatio  = 0.1
)

// Budget limits retries across every [Do] that shares it, typically one
// Budget per downstream service, so that when that service is failing the
// fleet stops multiplying its load. First attempts are never refused: a
// Budget limits retries, not traffic.
//
// It is the token bucket of gRPC's client retry throttling (gRFC A6). The
// bucket holds up to maxTokens and starts full. Each failed attempt that the
// Classifier would retry takes one token; each success gives back tokenRatio;
// a retry is allowed only while more than maxTokens/2 tokens remain. On
// average it refuses retries once the share of failing attempts passes
// tokenRatio/(1+tokenRatio): about 9% for a ratio of 0.1.
//
// # Sizing
//
// Below that threshold, maxTokens decides: failures come in random runs,
// and a run that takes maxTokens/2 tokens before the successes give them
// back refuses retries to a healthy service. For a failure rate f and
// ratio r, the bucket drifts up by m = (1-f)·r - f tokens per attempt with
// a variance of about v = f + (1-f)·r², and a run deep enough to refuse
// comes with a chance of about exp(-maxTokens·m/v) each time the bucket
// has been full. Take maxTokens of at least 7·v/m for the highest failure
// rate that should still be retried; with r = 0.1 that is about 10 for
// f = 5%, 50 for 8% and 100 for 8.5%. Measured on 10,000 calls of 4
// attempts each (TestBudgetSizing, a fixed random source, mean of three
// runs): at 8% failures,
// NewBudget(10, 0.1) fails 177 calls that retries would have saved,
// NewBudget(20, 0.1) 35, and NewBudget(50, 0.1) and NewBudget(100, 0.1)
// none, as without a Budget; at 5%, NewBudget(10, 0.1) fails 3. At 20%
// failures, past the threshold, every size cuts the attempts per call
// from 1.25 to 1.00. The price of a larger bucket is a slower stop: a
// dead service gets up to maxTokens/2 retries, across all the calls that
// share the Budget, before it refuses the rest (10,000 calls make 1.0037
// attempts each with NewBudget(100, 0.1), 1.0003 with NewBudget(10, 0.1)).
//
// A Budget cannot tell a dead network from a dying server: when every caller
// that shares it fails at once, it refuses all retries after about
// maxTokens/2 failures. That is its purpose, load shedding; size it per
// downstream service, and leave riding out a short outage to the Policy's
// attempts and MaxElapsed.
//
// The zero Budget is ready to use, as NewBudget(10, 0.1), the size of gRFC
// A6's example: enough for a service that fails under about 5% of its
// attempts. A Budget is safe
// for concurrent use and takes no lock: when all is well, a success costs one
// atomic load.
type Budget struct {
	maxTokens, ratio float64       // zero means the default; set only by NewBudget
	deficit          atomic.Uint64 // float64 bits of maxTokens − tokens, so that zero is a full bucket
}

// NewBudget returns a full Budget of maxTokens that gives back tokenRatio
// per success. Both must be positive and finite, and tokenRatio at most
// maxTokens.
func NewBudget(maxTokens, tokenRatio float64) (*Budget, error) {
	switch {
	case !(maxTokens > 0) || math.IsInf(maxTokens, 0):
		return nil, fmt.Errorf("retry: NewBudget: maxTokens %v is not a positive finite number", maxTokens)
	case !(tokenRatio > 0) || math.IsInf(tokenRatio, 0):
		return nil, fmt.Errorf("retry: NewBudget: tokenRatio %v is not a positive finite number", tokenRatio)
	case tokenRatio > maxTokens:
		return nil, fmt.Errorf("retry: NewBudget: tokenRatio %v is above maxTokens %v", tokenRatio, maxTokens)
	}
	return &Budget{maxTokens: maxTokens, ratio: tokenRatio}, nil
}

func (b *Budget) limits() (maxTokens, ratio float64) {
	if b.maxTokens == 0 {
		return defaultBudgetTokens, defaultBudgetRatio
	}
	return b.maxTokens, b.ratio
}

// Tokens returns how many tokens the bucket holds now, for metrics.
func (b *Budget) Tokens() float64 {
	maxTokens, _ := b.limits()
	return maxTokens - math.Float64frombits(b.deficit.Load())
}

// allow reports whether a retry may go ahead.
func (b *Budget) allow() bool {
	maxTokens, _ := b.limits()
	return math.Float64frombits(b.deficit.Load()) < maxTokens/2
}

// failed takes a token for a failed attempt.
func (b *Budget) failed() {
	maxTokens, _ := b.limits()
	b.update(func(deficit float64) float64 { return min(deficit+1, maxTokens) })
}

// succeeded gives back a ratio of a token.
func (b *Budget) succeeded() {
	_, ratio := b.limits()
	b.update(func(deficit float64) float64 { return max(deficit-ratio, 0) })
}

// update applies f to the deficit with a compare-and-swap loop. A full
// bucket that stays full is only read, so a healthy service costs every
// caller one shared, unwritten cache line.
func (b *Budget) update(f func(deficit float64) float64) {
	for {
		old := b.deficit.Load()
		next := math.Float64bits(f(math.Float64frombits(old)))
		if next == old || b.deficit.CompareAndSwap(old, next) {
			return
		}
	}
}

// Default size of the zero Budgets.
const defaultBudgetKeys = 1024

// Budgets keeps one [Budget] per key, a downstream host or a tenant, so
// that the failures of one cannot use up the retries of the others: a
// single Budget is shared fate for everything that shares it.
//
// It holds at most maxKeys Budgets. When a new key comes and it is full, it
// forgets one of the others; a key that comes back then starts with a full
// bucket, which errs on the side of retrying. So traffic to any number of
// keys (a webhook sender's user-supplied hosts) cannot grow its memory.
//
// The zero Budgets is ready to use, as NewBudgets(10, 0.1, 1024). A Budgets
// is safe for concurrent use.
type Budgets struct {
	maxTokens, ratio float64 // zero means the default; set only by NewBudgets
	maxKeys          int

	k keyed[Budget]
}

// NewBudgets returns a Budgets whose Budgets hold maxTokens and give back
// tokenRatio per success, as NewBudget's do, for at most maxKeys keys.
func NewBudgets(maxTokens, tokenRatio float64, maxKeys int) (*Budgets, error) {
	if _, err := NewBudget(maxTokens, tokenRatio); err != nil {
		return nil, fmt.Errorf("retry: NewBudgets: %w", err)
	}
	if maxKeys <= 0 {
		return nil, fmt.Errorf("retry: NewBudgets: maxKeys %d is not positive", maxKeys)
	}
	return &Budgets{maxTokens: maxTokens, ratio: tokenRatio, maxKeys: maxKeys}, nil
}

// Get returns the Budget of key, made on first use.
func (bs *Budgets) Get(key string) *Budget {
	return bs.k.get(key, cmp.Or(bs.maxKeys, defaultBudgetKeys), bs.make, nil)
}

func (bs *Budgets) make(string) *Budget {
	return &Budget{maxTokens: bs.maxTokens, ratio: bs.ratio}
}
