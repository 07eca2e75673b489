package guard

import (
	"cmp"
	"iter"
	"math"
	"sync/atomic"
)

// Default size of the zero Budget.
const (
	defaultBudgetTokens = 10
	defaultBudgetRatio  = 0.1
)

// Budget limits retries across every retry.Do that shares it, typically one
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
// How to size maxTokens for the failure rate a service should still ride
// out, with measurements, is in docs/budgets.md.
//
// A Budget cannot tell a dead network from a dying server: when every caller
// that shares it fails at once, it refuses all retries after about
// maxTokens/2 failures. That is its purpose, load shedding; size it per
// downstream service, and leave riding out a short outage to the Policy's
// attempts and MaxElapsed.
//
// The zero Budget is ready to use, as NewBudget(BudgetOptions{}): 10
// tokens and a ratio of 0.1, the size of gRFC
// A6's example: enough for a service that fails under about 5% of its
// attempts. A Budget is safe
// for concurrent use and takes no lock: when all is well, a success costs one
// atomic load.
type Budget struct {
	maxTokens, ratio float64       // zero means the default; set only by NewBudget
	deficit          atomic.Uint64 // float64 bits of maxTokens − tokens, so that zero is a full bucket
}

// BudgetOptions configures [NewBudget]. A zero field stands for the
// default in brackets.
type BudgetOptions struct {
	// MaxTokens is the size of the bucket [10]; positive and finite.
	MaxTokens float64
	// TokenRatio is what a success gives back [0.1]; positive, finite and
	// at most MaxTokens.
	TokenRatio float64
}

// resolve validates o and fills its defaults.
func (o BudgetOptions) resolve() (BudgetOptions, error) {
	if o.MaxTokens == 0 {
		o.MaxTokens = defaultBudgetTokens
	}
	if o.TokenRatio == 0 {
		o.TokenRatio = min(defaultBudgetRatio, o.MaxTokens)
	}
	switch {
	case !(o.MaxTokens > 0) || math.IsInf(o.MaxTokens, 0):
		return o, invalid("BudgetOptions.MaxTokens %v is not a positive finite number", o.MaxTokens)
	case !(o.TokenRatio > 0) || math.IsInf(o.TokenRatio, 0):
		return o, invalid("BudgetOptions.TokenRatio %v is not a positive finite number", o.TokenRatio)
	case o.TokenRatio > o.MaxTokens:
		return o, invalid("BudgetOptions.TokenRatio %v is above MaxTokens %v", o.TokenRatio, o.MaxTokens)
	}
	return o, nil
}

// NewBudget returns a full Budget with the options o, or an error
// matching [ErrInvalidOptions] that names the first option that cannot be
// used.
func NewBudget(o BudgetOptions) (*Budget, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	return &Budget{maxTokens: o.MaxTokens, ratio: o.TokenRatio}, nil
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

// AllowRetry reports whether a retry, or a hedge, may go ahead: whether the
// bucket holds more than half its tokens. It is one atomic load.
func (b *Budget) AllowRetry() bool {
	maxTokens, _ := b.limits()
	return math.Float64frombits(b.deficit.Load()) < maxTokens/2
}

// Failed takes a token, for a failed attempt that a retry would help.
func (b *Budget) Failed() {
	maxTokens, _ := b.limits()
	b.update(func(deficit float64) float64 { return min(deficit+1, maxTokens) })
}

// Succeeded gives back TokenRatio of a token, for a success.
func (b *Budget) Succeeded() {
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
// The zero Budgets is ready to use, as NewBudgets(BudgetOptions{}, 1024). A Budgets
// is safe for concurrent use.
type Budgets struct {
	maxTokens, ratio float64 // zero means the default; set only by NewBudgets
	maxKeys          int

	k keyed[Budget]
}

// NewBudgets returns a Budgets whose Budgets have the options o, as
// NewBudget's do, for at most maxKeys keys; or an error
// matching [ErrInvalidOptions].
func NewBudgets(o BudgetOptions, maxKeys int) (*Budgets, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if maxKeys <= 0 {
		return nil, invalid("NewBudgets: maxKeys %d is not positive", maxKeys)
	}
	return &Budgets{maxTokens: o.MaxTokens, ratio: o.TokenRatio, maxKeys: maxKeys}, nil
}

// Get returns the Budget of key, made on first use.
func (bs *Budgets) Get(key string) *Budget {
	return bs.k.get(key, cmp.Or(bs.maxKeys, defaultBudgetKeys), bs.make, nil)
}

func (bs *Budgets) make(string) *Budget {
	return &Budget{maxTokens: bs.maxTokens, ratio: bs.ratio}
}

// All yields the keys held when it is ranged over, in order, with their
// Budgets: for metrics and debug pages.
func (bs *Budgets) All() iter.Seq2[string, *Budget] { return bs.k.all() }
