package idempotency

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stormguard/retry"
)

// Defaults of [MemoryOptions]. A store is full at 100,000 keys: more than
// one keyed write a second, all day, kept for the default TTL of 24h, which
// is what one process of a service takes before it needs a shared store.
// 128 MiB holds that many results of about 1 KiB. One scope may hold a
// tenth of either, so that one caller filling the store leaves room for
// nine others as large, and for any number of smaller ones.
const (
	defaultMaxEntries = 100_000
	defaultMaxBytes   = 128 << 20
	defaultScopeShare = 10 // a scope's default bound is 1/defaultScopeShare of the store's
)

// entryOverhead is what a [MemoryStore] counts for each entry on top of its
// key, token, fingerprint and result: about what the map slot, the entry
// and its place in the expiry heap take.
const entryOverhead = 128

// MemoryOptions configures a [MemoryStore]. The zero value holds up to
// 100,000 keys and 128 MiB, a tenth of each for one scope, on the real
// clock.
type MemoryOptions struct {
	// MaxEntries bounds how many keys are claimed or completed at once
	// [100,000].
	MaxEntries int

	// MaxBytes bounds the bytes held: keys, tokens, fingerprints and
	// results, plus 128 bytes per key for bookkeeping [128 MiB]. It is
	// checked when a key is claimed: the result of a claim admitted is
	// saved even past it.
	MaxBytes int64

	// MaxScopeEntries bounds how many of the keys one scope holds at once
	// [MaxEntries/10]. A scope is what Options.Scope returns for a request:
	// one caller. Set it to MaxEntries to let one scope take the whole
	// store, as a service whose callers all share one scope must.
	//
	// The bound is per scope, so it holds back one caller only if that
	// caller cannot make new scopes at will: with the default scope (a
	// digest of the credentials), a client that sends made-up
	// Authorization values gets a scope for each. Authenticate before the
	// middleware, or scope by the authenticated principal.
	MaxScopeEntries int

	// MaxScopeBytes bounds the bytes one scope holds at once
	// [MaxBytes/10].
	MaxScopeBytes int64

	// Clock tells the time by which leases and TTLs run out [real time].
	Clock retry.Clock
}

// MemoryStore is a [Store] in the memory of one process, bounded in keys
// and bytes, in all and for each scope. It is the store of a [Middleware]
// whose Options.Store is nil.
//
// Entries leave when their lease or TTL runs out, never earlier: when a new
// key would pass a bound, or the store or its scope is past one, Claim
// returns an error that matches [ErrStoreFull] (the middleware answers 503,
// before the handler runs) rather than forget a result that a retry may
// still ask for. Complete never refuses the result of a claim admitted,
// since its handler has run: results may pass MaxBytes by as much as the
// responses in flight when it fills, which the process holds already, and
// new keys are refused until entries leave. The bound of each scope
// makes that refusal fall on the caller who filled its share, not on
// everyone: one client sending fresh keys as fast as it can fills its
// scope, a tenth of the store by default, and the others go on. Requests
// without credentials share one scope (see Options.Scope), so they share
// one share. Size the bounds for the keys that one TTL brings. It shares
// nothing between processes: a fleet needs a shared store such as package
// redisstore's.
//
// A MemoryStore is safe for concurrent use; each method takes one lock.
type MemoryStore struct {
	clk        retry.Clock
	maxEntries int
	maxBytes   int64
	maxScopeN  int
	maxScopeB  int64

	mu      sync.Mutex
	entries map[string]*entry
	scopes  map[string]*usage // what each scope holds; a scope that holds nothing is absent
	expiry  expiryHeap        // every entry, soonest expiry first
	all     usage
}

// usage is what a scope, or the whole store, holds.
type usage struct {
	entries int
	bytes   int64
}

// entry is one key: claimed by token, or completed by it once done is set.
type entry struct {
	key     string
	token   string
	done    bool
	fp      []byte
	result  []byte
	expires time.Time
	index   int    // in MemoryStore.expiry
	use     *usage // its scope's
}

func (e *entry) size() int64 {
	return int64(len(e.key)+len(e.token)+len(e.fp)+len(e.result)) + entryOverhead
}

// NewMemoryStore returns an empty MemoryStore. It rejects negative bounds,
// and a scope bound above the store's, with an error that matches
// [ErrInvalidOptions].
func NewMemoryStore(opts MemoryOptions) (*MemoryStore, error) {
	switch {
	case opts.MaxEntries < 0:
		return nil, invalid("MemoryOptions.MaxEntries %d is negative", opts.MaxEntries)
	case opts.MaxBytes < 0:
		return nil, invalid("MemoryOptions.MaxBytes %d is negative", opts.MaxBytes)
	case opts.MaxScopeEntries < 0:
		return nil, invalid("MemoryOptions.MaxScopeEntries %d is negative", opts.MaxScopeEntries)
	case opts.MaxScopeBytes < 0:
		return nil, invalid("MemoryOptions.MaxScopeBytes %d is negative", opts.MaxScopeBytes)
	}
	s := &MemoryStore{
		clk:        opts.Clock,
		maxEntries: opts.MaxEntries,
		maxBytes:   opts.MaxBytes,
		maxScopeN:  opts.MaxScopeEntries,
		maxScopeB:  opts.MaxScopeBytes,
		entries:    make(map[string]*entry),
		scopes:     make(map[string]*usage),
	}
	if s.maxEntries == 0 {
		s.maxEntries = defaultMaxEntries
	}
	if s.maxBytes == 0 {
		s.maxBytes = defaultMaxBytes
	}
	if s.maxScopeN == 0 {
		s.maxScopeN = max(s.maxEntries/defaultScopeShare, 1)
	}
	if s.maxScopeB == 0 {
		s.maxScopeB = max(s.maxBytes/defaultScopeShare, 1)
	}
	switch {
	case s.maxScopeN > s.maxEntries:
		return nil, invalid("MemoryOptions.MaxScopeEntries %d is above MaxEntries %d", s.maxScopeN, s.maxEntries)
	case s.maxScopeB > s.maxBytes:
		return nil, invalid("MemoryOptions.MaxScopeBytes %d is above MaxBytes %d", s.maxScopeB, s.maxBytes)
	}
	return s, nil
}

// Claim implements [Store].
func (s *MemoryStore) Claim(_ context.Context, key, token string, fingerprint []byte, lease time.Duration) (Claim, error) {
	if lease <= 0 {
		return Claim{}, fmt.Errorf("idempotency: MemoryStore.Claim: lease %v is not positive", lease)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expire(now)
	if e := s.entries[key]; e != nil {
		switch {
		case e.done:
			return Claim{State: Completed, Fingerprint: e.fp, Result: e.result}, nil
		case e.token == token: // the same call, sent again
			return Claim{State: Acquired}, nil
		}
		return Claim{State: InFlight, Fingerprint: e.fp}, nil
	}
	e := &entry{key: key, token: token, fp: fingerprint, expires: now.Add(lease)}
	if err := s.add(e); err != nil {
		return Claim{}, err
	}
	return Claim{State: Acquired}, nil
}

// Renew implements [Store].
func (s *MemoryStore) Renew(_ context.Context, key, token string, lease time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expire(now)
	e := s.entries[key]
	if e == nil || e.done || e.token != token {
		return ErrLeaseLost
	}
	e.expires = now.Add(lease)
	heap.Fix(&s.expiry, e.index)
	return nil
}

// Complete implements [Store].
func (s *MemoryStore) Complete(_ context.Context, key, token string, fingerprint, result []byte, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expire(now)
	e := s.entries[key]
	switch {
	case e == nil: // the lease ran out and nobody took the key: save anyway
		s.insert(&entry{key: key, token: token, done: true, fp: fingerprint, result: result, expires: now.Add(ttl)})
		return nil
	case e.token != token:
		return ErrLeaseLost
	case e.done: // the same call, sent again: the first result stays
		return nil
	}
	// Past the bounds too: the claim was admitted and its handler has run,
	// so refusing the result would only run it again on the retry. Claim
	// refuses new keys until the store is under its bounds again.
	s.account(e.use, 0, int64(len(result))-int64(len(e.result)))
	e.done, e.result, e.expires = true, result, now.Add(ttl)
	heap.Fix(&s.expiry, e.index)
	return nil
}

// Release implements [Store].
func (s *MemoryStore) Release(_ context.Context, key, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.now())
	e := s.entries[key]
	switch {
	case e == nil: // released already (the same call, sent again), or expired
		return nil
	case e.done || e.token != token:
		return ErrLeaseLost
	}
	s.remove(e)
	return nil
}

// Len returns how many keys the store holds, claimed or completed, and the
// bytes it counts for them. Entries whose time has run out are dropped
// first.
func (s *MemoryStore) Len() (entries int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.now())
	return s.all.entries, s.all.bytes
}

// add stores a new entry if the store and its scope have room for it.
func (s *MemoryStore) add(e *entry) error {
	if err := s.room(s.usageOf(e.key), 1, e.size()); err != nil {
		return err
	}
	s.insert(e)
	return nil
}

// usageOf returns what the scope of key holds: zero for a scope that holds
// nothing.
func (s *MemoryStore) usageOf(key string) *usage {
	if use := s.scopes[scopeOf(key)]; use != nil {
		return use
	}
	return &usage{}
}

// insert stores a new entry whatever the bounds say.
func (s *MemoryStore) insert(e *entry) {
	use := s.usageOf(e.key)
	if use.entries == 0 {
		s.scopes[scopeOf(e.key)] = use
	}
	e.use = use
	s.account(use, 1, e.size())
	s.entries[e.key] = e
	heap.Push(&s.expiry, e)
}

// room reports whether n more entries and b more bytes fit, in the store
// and in the scope that use counts.
func (s *MemoryStore) room(use *usage, n int, b int64) error {
	switch {
	case s.all.entries+n > s.maxEntries:
		return fmt.Errorf("%w: %d keys", ErrStoreFull, s.maxEntries)
	case s.all.bytes+b > s.maxBytes:
		return fmt.Errorf("%w: %d bytes", ErrStoreFull, s.maxBytes)
	case use.entries+n > s.maxScopeN:
		return fmt.Errorf("%w: this scope holds its %d keys", ErrStoreFull, s.maxScopeN)
	case use.bytes+b > s.maxScopeB:
		return fmt.Errorf("%w: this scope holds its %d bytes", ErrStoreFull, s.maxScopeB)
	}
	return nil
}

func (s *MemoryStore) account(use *usage, n int, b int64) {
	use.entries += n
	use.bytes += b
	s.all.entries += n
	s.all.bytes += b
}

// expire drops every entry whose lease or TTL has run out by now.
func (s *MemoryStore) expire(now time.Time) {
	for len(s.expiry) > 0 && !now.Before(s.expiry[0].expires) {
		s.remove(s.expiry[0])
	}
}

func (s *MemoryStore) remove(e *entry) {
	heap.Remove(&s.expiry, e.index)
	delete(s.entries, e.key)
	s.account(e.use, -1, -e.size())
	if e.use.entries == 0 {
		delete(s.scopes, scopeOf(e.key))
	}
}

func (s *MemoryStore) now() time.Time {
	if s.clk == nil {
		return time.Now()
	}
	return s.clk.Now()
}

// expiryHeap orders entries by expiry, for container/heap.
type expiryHeap []*entry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expires.Before(h[j].expires) }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *expiryHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}

func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
