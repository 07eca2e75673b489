package guard

import (
	"cmp"
	"iter"
	"math"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry/internal/coarse"
)

// Default size of the zero Budget.
const (
	defaultBudgetTokens = 10
	defaultBudgetRatio  = 0.1
)

// Budget limits retries across every retry.Do that shares it, typically one
// Budget per downstream service, so that when that service is failing the
// fleet stops multiplying its load. First attempts are never refused: a
// Budget limits retries, not traffic. It is one of two kinds, chosen by
// the options given to [NewBudget]: a token bucket, or a ratio budget.
//
// The token bucket is gRPC's client retry throttling (gRFC A6). The
// bucket holds up to MaxTokens and starts full. Each failed attempt that the
// Classifier would retry takes one token; each success gives back TokenRatio;
// a retry is allowed only while more than MaxTokens/2 tokens remain. On
// average it refuses retries once the share of failing attempts passes
// TokenRatio/(1+TokenRatio): about 9% for a ratio of 0.1. It remembers for
// as long as it takes successes to refill it, so a service that sees few
// calls, once a few of them fail, gets no retries for hours.
//
// The ratio budget is Finagle's RetryBudget, which Envoy's retry budgets
// follow: it allows a retry while the retries of the last TTL, this one
// included, are at most Ratio times the first attempts of the last TTL,
// plus MinPerSecond retries a second whatever the traffic. Successes and
// failures do not move it; what it counts is what was sent, so its
// memory is TTL, and the floor gives a service of 10 calls an hour its
// retries. Its window forgets a sixteenth of TTL at a time.
//
// How to size either, and when to choose which, with measurements, is in
// docs/budgets.md.
//
// A Budget cannot tell a dead network from a dying server: when every caller
// that shares it fails at once, a token bucket refuses all retries after
// about MaxTokens/2 failures, and a ratio budget holds them to Ratio of
// the traffic plus its floor. That is its purpose, load shedding; size it
// per downstream service, and leave riding out a short outage to the
// Policy's attempts and MaxElapsed.
//
// A loop tells a Budget what happened through its methods, as retry.Do
// does: [Budget.Started] as a call's first attempt goes,
// [Budget.AllowRetry] before a retry or a hedge, [Budget.Retrying] as one
// that it allowed goes, and [Budget.Failed] and [Budget.Succeeded] after
// each attempt. Each kind ignores the calls it has no use for, at the cost
// of one load.
//
// The zero Budget is ready to use, as NewBudget(BudgetOptions{}): a token
// bucket of 10 tokens and a ratio of 0.1, the size of gRFC A6's example:
// enough for a service that fails under about 5% of its attempts. A Budget
// is safe for concurrent use and takes no lock: when all is well, a
// success costs a token bucket one atomic load, and a first attempt costs
// a ratio budget one atomic add (see docs/budgets.md for the numbers).
type Budget struct {
	maxTokens, tokenRatio float64       // zero means the default; set only by NewBudget
	deficit               atomic.Uint64 // float64 bits of maxTokens − tokens, so that zero is a full bucket
	r                     *ratioBudget  // set for a ratio budget, by NewBudget
}

// BudgetOptions configures [NewBudget]. A zero field stands for the
// default in brackets. Setting any of Ratio, MinPerSecond and TTL makes a
// ratio budget, with the defaults of Finagle's RetryBudget for the others;
// otherwise the Budget is a token bucket. The two kinds do not mix: a
// ratio field with MaxTokens or TokenRatio is an error.
type BudgetOptions struct {
	// MaxTokens is the size of a token bucket [10]; positive and finite.
	MaxTokens float64
	// TokenRatio is what a success gives back to a token bucket [0.1];
	// positive, finite and at most MaxTokens.
	TokenRatio float64

	// Ratio is the share of first attempts that a ratio budget lets be
	// retried [0.2]; positive and at most 1000.
	Ratio float64
	// MinPerSecond is the retries a second that a ratio budget allows
	// whatever the traffic [10]; positive and at most 1e6.
	MinPerSecond float64
	// TTL is how long a ratio budget remembers an attempt [10s]; from a
	// millisecond to a day.
	TTL time.Duration
	// Clock is a ratio budget's time source [real time]; a token bucket
	// reads no time.
	Clock Clock
}

// ratio reports whether o asks for a ratio budget.
func (o BudgetOptions) ratio() bool { return o.Ratio != 0 || o.MinPerSecond != 0 || o.TTL != 0 }

// resolve validates o and fills its defaults.
func (o BudgetOptions) resolve() (BudgetOptions, error) {
	if o.ratio() {
		return o.resolveRatio()
	}
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

// NewBudget returns a Budget with the options o, a full token bucket or
// an empty ratio budget, or an error matching [ErrInvalidOptions] that
// names the first option that cannot be used.
func NewBudget(o BudgetOptions) (*Budget, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	return o.budget(nil), nil
}

// budget makes a Budget of the resolved o; a ratio budget on the real
// clock reads c, which the Budgets of one key space share, or a clock of
// its own when c is nil.
func (o BudgetOptions) budget(c *coarse.Clock) *Budget {
	if o.ratio() {
		return &Budget{r: newRatioBudget(o, c)}
	}
	return &Budget{maxTokens: o.MaxTokens, tokenRatio: o.TokenRatio}
}

func (b *Budget) limits() (maxTokens, ratio float64) {
	if b.maxTokens == 0 {
		return defaultBudgetTokens, defaultBudgetRatio
	}
	return b.maxTokens, b.tokenRatio
}

// Tokens returns, for metrics, how many tokens a token bucket holds now,
// or how many retries a ratio budget would allow now.
func (b *Budget) Tokens() float64 {
	if b.r != nil {
		return b.r.left()
	}
	maxTokens, _ := b.limits()
	return maxTokens - math.Float64frombits(b.deficit.Load())
}

// AllowRetry reports whether a retry, or a hedge, may go ahead: whether a
// token bucket holds more than half its tokens (one atomic load), or
// whether a ratio budget has room for one more retry in its window. It
// takes nothing: a loop that goes ahead tells a ratio budget so with
// Retrying.
func (b *Budget) AllowRetry() bool {
	if b.r != nil {
		return b.r.allow()
	}
	maxTokens, _ := b.limits()
	return math.Float64frombits(b.deficit.Load()) < maxTokens/2
}

// Started tells the Budget that a call's first attempt is being sent. A
// ratio budget counts it, which lets Ratio of a retry go; a token bucket
// ignores it.
func (b *Budget) Started() {
	if b.r != nil {
		b.r.count(0)
	}
}

// Retrying tells the Budget that a retry or a hedge that AllowRetry
// allowed is going ahead. A ratio budget counts it against its window; a
// token bucket ignores it, having taken its token at Failed.
func (b *Budget) Retrying() {
	if b.r != nil {
		b.r.count(1)
	}
}

// Failed takes a token from a token bucket, for a failed attempt that a
// retry would help. A ratio budget ignores it.
func (b *Budget) Failed() {
	if b.r != nil {
		return
	}
	maxTokens, _ := b.limits()
	b.update(func(deficit float64) float64 { return min(deficit+1, maxTokens) })
}

// Succeeded gives back TokenRatio of a token to a token bucket, for a
// success. A ratio budget ignores it.
func (b *Budget) Succeeded() {
	if b.r != nil {
		return
	}
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
// bucket, or a ratio budget's floor, which errs on the side of retrying. So traffic to any number of
// keys (a webhook sender's user-supplied hosts) cannot grow its memory.
//
// The zero Budgets is ready to use, as NewBudgets(BudgetOptions{}, 1024). A Budgets
// is safe for concurrent use.
type Budgets struct {
	o       BudgetOptions // resolved; the zero value stands for the default token bucket
	coarse  *coarse.Clock // the real clock of ratio budgets, shared by every key
	maxKeys int

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
	bs := &Budgets{o: o, maxKeys: maxKeys}
	if o.ratio() && o.Clock == nil {
		bs.coarse = newRatioClock(o.TTL)
	}
	return bs, nil
}

// Get returns the Budget of key, made on first use.
func (bs *Budgets) Get(key string) *Budget {
	return bs.k.get(key, cmp.Or(bs.maxKeys, defaultBudgetKeys), bs.make, nil)
}

func (bs *Budgets) make(string) *Budget { return bs.o.budget(bs.coarse) }

// All yields the keys held when it is ranged over, in order, with their
// Budgets: for metrics and debug pages.
func (bs *Budgets) All() iter.Seq2[string, *Budget] { return bs.k.all() }
