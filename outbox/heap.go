package outbox

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
