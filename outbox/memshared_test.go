package outbox_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stormguard/retry/outbox"
)

// memShared is an outbox.SharedJournal in memory, shared by the Outboxes
// of one test as a database is by processes. It counts its calls.
type memShared struct {
	mu     sync.Mutex
	order  []string
	ops    map[string]*memOp
	tokens int
	claims int // Claim calls
	loads  int // Load calls
	writes int // Update calls
}

type memOp struct {
	e     outbox.Entry // e.Lease: the lease, "" when none
	until time.Time
}

func newMemShared() *memShared { return &memShared{ops: map[string]*memOp{}} }

// handle returns a journal over m that a test may close: one "process".
func (m *memShared) handle() outbox.SharedJournal { return &memHandle{m: m} }

type memHandle struct {
	m      *memShared
	closed bool
}

var errMemClosed = fmt.Errorf("memShared: %w", outbox.ErrClosed)

func (h *memHandle) lock() (*memShared, error) {
	h.m.mu.Lock()
	if h.closed {
		h.m.mu.Unlock()
		return nil, errMemClosed
	}
	return h.m, nil
}

func (h *memHandle) Add(_ context.Context, e outbox.Entry) error {
	m, err := h.lock()
	if err != nil {
		return err
	}
	defer m.mu.Unlock()
	if _, ok := m.ops[e.Op.Key]; ok {
		return outbox.ErrDuplicate
	}
	e.Lease = ""
	m.ops[e.Op.Key] = &memOp{e: e}
	m.order = append(m.order, e.Op.Key)
	return nil
}

func (h *memHandle) Update(_ context.Context, e outbox.Entry) error {
	m, err := h.lock()
	if err != nil {
		return err
	}
	defer m.mu.Unlock()
	m.writes++
	p, ok := m.ops[e.Op.Key]
	if !ok {
		return fmt.Errorf("memShared: update of an unknown key")
	}
	if p.e.Lease != e.Lease {
		return outbox.ErrLeaseLost
	}
	e.Op.Kind, e.Op.Payload, e.Enqueued = p.e.Op.Kind, p.e.Op.Payload, p.e.Enqueued
	if e.State != outbox.Pending {
		e.Lease, p.until = "", time.Time{}
	}
	p.e = e
	return nil
}

func (h *memHandle) Load(context.Context) ([]outbox.Entry, error) {
	m, err := h.lock()
	if err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	m.loads++
	es := make([]outbox.Entry, 0, len(m.order))
	for _, k := range m.order {
		es = append(es, m.ops[k].e)
	}
	return es, nil
}

func (h *memHandle) Close() error {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	h.closed = true
	return nil
}

func (h *memHandle) Claim(_ context.Context, c outbox.ClaimRequest) ([]outbox.Entry, error) {
	m, err := h.lock()
	if err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	m.claims++
	var due []*memOp
	for _, k := range m.order {
		p := m.ops[k]
		if p.e.State == outbox.Pending && !p.e.Next.After(c.Now) && (p.e.Lease == "" || !p.until.After(c.Now)) && slices.Contains(c.Kinds, p.e.Op.Kind) {
			due = append(due, p)
		}
	}
	slices.SortStableFunc(due, func(a, b *memOp) int { return a.e.Next.Compare(b.e.Next) })
	due = due[:min(len(due), c.Limit)]
	m.tokens++
	es := make([]outbox.Entry, len(due))
	for i, p := range due {
		p.e.Lease, p.until = fmt.Sprintf("%s#%d", c.Owner, m.tokens), c.Until
		if c.Count {
			p.e.Attempts++
		}
		es[i] = p.e
	}
	return es, nil
}

func (h *memHandle) Renew(_ context.Context, held []outbox.Entry, until time.Time) ([]string, error) {
	m, err := h.lock()
	if err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var lost []string
	for _, e := range held {
		if p, ok := m.ops[e.Op.Key]; ok && p.e.Lease == e.Lease && e.Lease != "" {
			p.until = until
		} else {
			lost = append(lost, e.Op.Key)
		}
	}
	return lost, nil
}

func (h *memHandle) Release(_ context.Context, e outbox.Entry) error {
	m, err := h.lock()
	if err != nil {
		return err
	}
	defer m.mu.Unlock()
	if p, ok := m.ops[e.Op.Key]; ok && e.Lease != "" && p.e.Lease == e.Lease {
		p.e.Lease, p.until = "", time.Time{}
	}
	return nil
}

// get returns the journal's entry for key.
func (m *memShared) get(key string) outbox.Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops[key].e
}

// steal gives key's lease to another process, as one that claimed it
// after our lease lapsed would hold it.
func (m *memShared) steal(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops[key].e.Lease = "thief#1"
	m.ops[key].until = time.Now().Add(time.Hour)
}

func (m *memShared) updates() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writes
}

func (m *memShared) counts() (claims, loads int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.claims, m.loads
}

func (h *memHandle) Get(_ context.Context, keys []string) ([]outbox.Entry, error) {
	m, err := h.lock()
	if err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var es []outbox.Entry
	for _, k := range keys {
		if p, ok := m.ops[k]; ok {
			es = append(es, p.e)
		}
	}
	return es, nil
}
