package outbox

import "time"

// itemHeap is a container/heap of items in the order O, which also names
// the field where each item keeps its place in the heap (-1 when out of
// it), so that heap.Remove can take any of them out.
type itemHeap[O heapOrder] []*item

type heapOrder interface {
	less(a, b *item) bool
	index(p *item) *int
}

// opHeap orders pending ops by the time of their next attempt, then by
// when they were enqueued.
type opHeap = itemHeap[dueOrder]

// ageHeap orders the unfinished ops by when they were enqueued.
type ageHeap = itemHeap[ageOrder]

type dueOrder struct{}

func (dueOrder) less(a, b *item) bool {
	if !a.e.Next.Equal(b.e.Next) {
		return a.e.Next.Before(b.e.Next)
	}
	return a.e.Enqueued.Before(b.e.Enqueued)
}
func (dueOrder) index(p *item) *int { return &p.index }

type ageOrder struct{}

func (ageOrder) less(a, b *item) bool { return a.e.Enqueued.Before(b.e.Enqueued) }
func (ageOrder) index(p *item) *int   { return &p.ageIndex }

func (h itemHeap[O]) Len() int           { return len(h) }
func (h itemHeap[O]) Less(i, j int) bool { var o O; return o.less(h[i], h[j]) }
func (h itemHeap[O]) Swap(i, j int) {
	var o O
	h[i], h[j] = h[j], h[i]
	*o.index(h[i]), *o.index(h[j]) = i, j
}
func (h *itemHeap[O]) Push(x any) {
	var o O
	p := x.(*item)
	*o.index(p) = len(*h)
	*h = append(*h, p)
}
func (h *itemHeap[O]) Pop() any {
	var o O
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*o.index(p) = -1
	*h = old[:len(old)-1]
	return p
}

// walk calls visit on items from the heap's top down, and on the children
// of an item only when visit returns true for it: since no child comes
// before its parent, a walk for the earliest items that meet a test
// visits those and the items above them, not the whole heap.
func (h itemHeap[O]) walk(visit func(p *item) (descend bool)) {
	if len(h) == 0 {
		return
	}
	stack := make([]int, 1, 16)
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if visit(h[i]) {
			for _, c := range [2]int{2*i + 1, 2*i + 2} {
				if c < len(h) {
					stack = append(stack, c)
				}
			}
		}
	}
}

// earliestFree is the earliest next time of an op in h that busy does not
// name, zero when there is none: runShared's next claim for an op put
// back here. It walks down only through busy ops, so that it costs what
// the busy ones above the answer do, not the whole heap.
func earliestFree(h opHeap, busy func(key string) bool) time.Time {
	var at time.Time
	h.walk(func(p *item) bool {
		if !at.IsZero() && !p.e.Next.Before(at) {
			return false // nor any below it
		}
		if busy(p.e.Op.Key) {
			return true // one below may be free
		}
		at = p.e.Next
		return false
	})
	return at
}

// dueFree is the ops in h due by now that busy does not name.
func dueFree(h opHeap, now time.Time, busy func(key string) bool) []*item {
	var due []*item
	h.walk(func(p *item) bool {
		if p.e.Next.After(now) {
			return false // nor any below it
		}
		if !busy(p.e.Op.Key) {
			due = append(due, p)
		}
		return true
	})
	return due
}
