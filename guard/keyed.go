package guard

import (
	"cmp"
	"iter"
	"slices"
	"sync"

	"github.com/stormguard/retry/internal/coarse"
)

// defaultGuardKeys is how many keys the zero Breakers and Throttles hold,
// as the zero Budgets does.
const defaultGuardKeys = defaultBudgetKeys

// evictSamples is how many entries a full keyed set looks at for one to
// forget that holds no news (a closed breaker, a throttle that does not
// shed) before it forgets any.
const evictSamples = 8

// keyed is a bounded map of key to *T, made on first use: the body of
// Budgets, Breakers and Throttles.
//
// live answers a key that exists without a lock, so that calls from many
// goroutines do not queue on one mutex to find it; m, under mu, is the same
// set, where a new key is added and one to forget is drawn.
type keyed[T any] struct {
	live sync.Map // key → *T
	mu   sync.Mutex
	m    map[string]*T
}

// get returns the value of key, made by mk when new; when the map holds
// maxKeys already, it forgets one, idle if one of a few looked at is (nil
// idle: any one will do).
func (k *keyed[T]) get(key string, maxKeys int, mk func(key string) *T, idle func(*T) bool) *T {
	if v, ok := k.live.Load(key); ok {
		return v.(*T)
	}
	return k.add(key, maxKeys, mk, idle)
}

func (k *keyed[T]) add(key string, maxKeys int, mk func(key string) *T, idle func(*T) bool) *T {
	k.mu.Lock()
	defer k.mu.Unlock()
	if v, ok := k.m[key]; ok {
		return v
	}
	if k.m == nil {
		k.m = make(map[string]*T)
	}
	if len(k.m) >= maxKeys {
		victim, looked := "", 0
		for key, v := range k.m { // map order is random
			if looked == 0 || idle == nil || idle(v) {
				victim = key
			}
			if looked++; looked == evictSamples || idle == nil || idle(v) {
				break
			}
		}
		delete(k.m, victim)
		k.live.Delete(victim)
	}
	v := mk(key)
	k.m[key] = v
	k.live.Store(key, v)
	return v
}

// all yields the keys held when it is ranged over, in order, and their
// values; the lock is not held while they are yielded.
func (k *keyed[T]) all() iter.Seq2[string, *T] {
	type kv struct {
		key string
		v   *T
	}
	return func(yield func(string, *T) bool) {
		k.mu.Lock()
		l := make([]kv, 0, len(k.m))
		for key, v := range k.m {
			l = append(l, kv{key, v})
		}
		k.mu.Unlock()
		slices.SortFunc(l, func(a, b kv) int { return cmp.Compare(a.key, b.key) })
		for _, e := range l {
			if !yield(e.key, e.v) {
				return
			}
		}
	}
}

// Breakers keeps one [Breaker] per key, a downstream host or target, so
// that one host that is down fails fast without failing the others: a
// single Breaker is shared fate for everything that shares it.
//
// It holds at most maxKeys Breakers, as [Budgets] holds Budgets. When a
// new key comes and it is full, it forgets one of the others, a closed one
// if one of the few it looks at is; a key that comes back then starts
// closed, which errs on the side of sending.
//
// The zero Breakers is ready to use, with the defaults of a zero
// [BreakerOptions] and 1024 keys. A Breakers is safe for concurrent use.
type Breakers struct {
	o       BreakerOptions
	maxKeys int
	k       keyed[Breaker]
	ws      watchers      // every Breaker's
	coarse  *coarse.Clock // every Breaker's, set under k's lock
}

// NewBreakers returns a Breakers whose Breakers have the options o, as
// NewBreaker's do, for at most maxKeys keys; or an error matching
// [ErrInvalidOptions].
func NewBreakers(o BreakerOptions, maxKeys int) (*Breakers, error) {
	if _, err := NewBreaker(o); err != nil {
		return nil, err
	}
	if maxKeys <= 0 {
		return nil, invalid("NewBreakers: maxKeys %d is not positive", maxKeys)
	}
	return &Breakers{o: o, maxKeys: maxKeys}, nil
}

// Get returns the Breaker of key, made on first use.
func (bs *Breakers) Get(key string) *Breaker {
	return bs.k.get(key, cmp.Or(bs.maxKeys, defaultGuardKeys), bs.make, func(b *Breaker) bool { return b.AllowRetry() })
}

func (bs *Breakers) make(key string) *Breaker {
	b, err := NewBreaker(bs.o)
	if err != nil { // the zero Breakers, or options NewBreakers checked
		b = new(Breaker)
	}
	b.key = key
	b.ws.Store(&bs.ws)
	// One coarse clock for every member (mk runs under the set's lock).
	if bs.coarse == nil {
		bs.coarse = b.coarse
	} else if b.coarse != nil {
		b.coarse = bs.coarse
	}
	return b
}

// All yields the keys held when it is ranged over, in order, with their
// Breakers: for metrics and debug pages.
func (bs *Breakers) All() iter.Seq2[string, *Breaker] { return bs.k.all() }

// Throttles keeps one [Throttle] per key, a downstream host or target, so
// that one host's overload sheds only the requests to it.
//
// It holds at most maxKeys Throttles, as [Budgets] holds Budgets. When a
// new key comes and it is full, it forgets one of the others, one that
// does not shed if one of the few it looks at does not; a key that comes
// back then starts with an empty window, which errs on the side of
// sending.
//
// The zero Throttles is ready to use, with the defaults of a zero
// [ThrottleOptions] and 1024 keys. A Throttles is safe for concurrent use.
type Throttles struct {
	o       ThrottleOptions
	maxKeys int
	k       keyed[Throttle]
	ws      watchers      // every Throttle's
	coarse  *coarse.Clock // every Throttle's, set under k's lock
}

// NewThrottles returns a Throttles whose Throttles have the options o, as
// NewThrottle's do, for at most maxKeys keys; or an error matching
// [ErrInvalidOptions].
func NewThrottles(o ThrottleOptions, maxKeys int) (*Throttles, error) {
	if _, err := NewThrottle(o); err != nil {
		return nil, err
	}
	if maxKeys <= 0 {
		return nil, invalid("NewThrottles: maxKeys %d is not positive", maxKeys)
	}
	return &Throttles{o: o, maxKeys: maxKeys}, nil
}

// Get returns the Throttle of key, made on first use.
func (ts *Throttles) Get(key string) *Throttle {
	return ts.k.get(key, cmp.Or(ts.maxKeys, defaultGuardKeys), ts.make, func(t *Throttle) bool { return !t.on.Load() })
}

func (ts *Throttles) make(key string) *Throttle {
	t, err := NewThrottle(ts.o)
	if err != nil { // the zero Throttles, or options NewThrottles checked
		t = new(Throttle)
	}
	t.key = key
	t.ws.Store(&ts.ws)
	if ts.coarse == nil {
		ts.coarse = t.coarse
	} else if t.coarse != nil {
		t.coarse = ts.coarse
	}
	return t
}

// All yields the keys held when it is ranged over, in order, with their
// Throttles: for metrics and debug pages.
func (ts *Throttles) All() iter.Seq2[string, *Throttle] { return ts.k.all() }

// Limiters keeps one [Limiter] per key, a downstream host or target, so
// that a slow host fills only its own slots and the calls to the others
// go on.
//
// It holds at most maxKeys Limiters, as [Budgets] holds Budgets. When a
// new key comes and it is full, it forgets one of the others, one with no
// attempt in flight or queued if one of the few it looks at has none; a
// key that comes back then starts with all its slots free.
//
// The zero Limiters is ready to use, with the defaults of a zero
// [LimiterOptions] and 1024 keys. A Limiters is safe for concurrent use.
type Limiters struct {
	o       LimiterOptions
	maxKeys int
	k       keyed[Limiter]
}

// NewLimiters returns a Limiters whose Limiters have the options o, as
// NewLimiter's do, for at most maxKeys keys; or an error matching
// [ErrInvalidOptions].
func NewLimiters(o LimiterOptions, maxKeys int) (*Limiters, error) {
	if _, err := o.state(); err != nil {
		return nil, err
	}
	if maxKeys <= 0 {
		return nil, invalid("NewLimiters: maxKeys %d is not positive", maxKeys)
	}
	return &Limiters{o: o, maxKeys: maxKeys}, nil
}

// Get returns the Limiter of key, made on first use.
func (ls *Limiters) Get(key string) *Limiter {
	return ls.k.get(key, cmp.Or(ls.maxKeys, defaultGuardKeys), ls.make, (*Limiter).idle)
}

func (ls *Limiters) make(string) *Limiter {
	l, err := NewLimiter(ls.o)
	if err != nil { // the zero Limiters, or options NewLimiters checked
		l = new(Limiter)
	}
	return l
}

// All yields the keys held when it is ranged over, in order, with their
// Limiters: for metrics and debug pages.
func (ls *Limiters) All() iter.Seq2[string, *Limiter] { return ls.k.all() }

// Keyed is how every integration takes guards per key (retry.Policy's
// WithGuards fills a Policy from it): retryhttp per
// origin, retrygrpc per target, the outbox per kind of op. Each set, when
// not nil, gives each key a guard of its own for a Policy that has none,
// so that one key's trouble does not spend the others' retries, open
// their breaker or shed their attempts. Holds, when set, keeps the holds
// by the same keys, so that the Transports (or interceptors, or outboxes)
// given one Keyed hold one another's targets back; when nil, each keeps
// holds of its own (the outbox, none). Limiters, when set, gives each key
// a bulkhead of its own. The zero Keyed adds nothing.
type Keyed struct {
	Budgets   *Budgets
	Breakers  *Breakers
	Throttles *Throttles
	Holds     *Holds
	Limiters  *Limiters
}
