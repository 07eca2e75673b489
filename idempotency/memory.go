package idempotency

import (
	"container/heap"
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/stormguard/retry"
)

// Defaults of [MemoryOptions].
const (
	defaultMaxEntries = 10_000
	defaultMaxBytes   = 64 << 20
)

// entryOverhead is what a [MemoryStore] counts for each entry on top of its
// key, fingerprint and result: about what the map slot, the entry and its
// place in the expiry heap take.
const entryOverhead = 128

// MemoryOptions configures a [MemoryStore]. The zero value holds up to
// 10,000 keys and 64 MiB on the real clock.
type MemoryOptions struct {
	// MaxEntries bounds how many keys are claimed or completed at once
	// [10,000].
	MaxEntries int

	// MaxBytes bounds the bytes held: keys, fingerprints and results, plus
	// 128 bytes per key for bookkeeping [64 MiB].
	MaxBytes int64

	// Clock tells the time by which leases and TTLs run out [real time].
	Clock retry.Clock
}

// MemoryStore is a [Store] in the memory of one process, bounded in keys
// and bytes. It is the store of a [Middleware] whose Options.Store is nil.
//
// Entries leave when their lease or TTL runs out, never earlier: when a new
// key or a result would pass a bound, Claim or Complete returns
// [ErrStoreFull] (the middleware answers 503) rather than forget a result
// that a retry may still ask for. Size the bounds for the keys that one TTL
// brings. It shares nothing between processes: a fleet needs a shared
// store such as package redisstore's.
//
// A MemoryStore is safe for concurrent use; each method takes one lock.
type MemoryStore struct {
	clk        retry.Clock
	maxEntries int
	maxBytes   int64

	mu      sync.Mutex
	entries map[string]*entry
	expiry  expiryHeap // every entry, soonest expiry first
	bytes   int64
	seq     uint64 // the last token handed out
}

// entry is one key: claimed while token is set, completed once it is "".
type entry struct {
	key     string
	token   string
	fp      []byte
	result  []byte
	expires time.Time
	index   int // in MemoryStore.expiry
}

func (e *entry) size() int64 {
	return int64(len(e.key)+len(e.fp)+len(e.result)) + entryOverhead
}

// NewMemoryStore returns an empty MemoryStore. It rejects negative bounds
// with an error that matches [ErrInvalidOptions].
func NewMemoryStore(opts MemoryOptions) (*MemoryStore, error) {
	switch {
	case opts.MaxEntries < 0:
		return nil, invalid("MemoryOptions.MaxEntries %d is negative", opts.MaxEntries)
	case opts.MaxBytes < 0:
		return nil, invalid("MemoryOptions.MaxBytes %d is negative", opts.MaxBytes)
	}
	s := &MemoryStore{
		clk:        opts.Clock,
		maxEntries: opts.MaxEntries,
		maxBytes:   opts.MaxBytes,
		entries:    make(map[string]*entry),
	}
	if s.maxEntries == 0 {
		s.maxEntries = defaultMaxEntries
	}
	if s.maxBytes == 0 {
		s.maxBytes = defaultMaxBytes
	}
	return s, nil
}

// Claim implements [Store].
func (s *MemoryStore) Claim(_ context.Context, key string, fingerprint []byte, lease time.Duration) (Claim, error) {
	if lease <= 0 {
		return Claim{}, fmt.Errorf("idempotency: MemoryStore.Claim: lease %v is not positive", lease)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expire(now)
	if e := s.entries[key]; e != nil {
		if e.token != "" {
			return Claim{State: InFlight, Fingerprint: e.fp}, nil
		}
		return Claim{State: Completed, Fingerprint: e.fp, Result: e.result}, nil
	}
	s.seq++
	e := &entry{key: key, token: strconv.FormatUint(s.seq, 10), fp: fingerprint, expires: now.Add(lease)}
	if len(s.entries) >= s.maxEntries || s.bytes+e.size() > s.maxBytes {
		return Claim{}, ErrStoreFull
	}
	s.entries[key] = e
	s.bytes += e.size()
	heap.Push(&s.expiry, e)
	return Claim{State: Acquired, Token: e.token}, nil
}

// Renew implements [Store].
func (s *MemoryStore) Renew(_ context.Context, key, token string, lease time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	e := s.held(key, token, now)
	if e == nil {
		return ErrLeaseLost
	}
	e.expires = now.Add(lease)
	heap.Fix(&s.expiry, e.index)
	return nil
}

// Complete implements [Store].
func (s *MemoryStore) Complete(_ context.Context, key, token string, result []byte, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	e := s.held(key, token, now)
	if e == nil {
		return ErrLeaseLost
	}
	if grow := int64(len(result)) - int64(len(e.result)); s.bytes+grow > s.maxBytes {
		return ErrStoreFull
	}
	s.bytes += int64(len(result)) - int64(len(e.result))
	e.token, e.result, e.expires = "", result, now.Add(ttl)
	heap.Fix(&s.expiry, e.index)
	return nil
}

// Release implements [Store].
func (s *MemoryStore) Release(_ context.Context, key, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.held(key, token, s.now())
	if e == nil {
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
	return len(s.entries), s.bytes
}

// held returns key's entry if the claim that token names still holds it.
func (s *MemoryStore) held(key, token string, now time.Time) *entry {
	e := s.entries[key]
	if e == nil || e.token == "" || e.token != token || !now.Before(e.expires) {
		return nil
	}
	return e
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
	s.bytes -= e.size()
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
