package outbox

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The pruned walks of the due heap answer what a scan of every op does,
// and earliestFree asks about the busy ops and their children only:
// runShared asks it at every turn of its loop, with thousands of ops
// backing off and a few busy.
func TestDueWalksMatchAScan(t *testing.T) {
	base := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for seed := range uint64(50) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 1))
			var h opHeap
			busy := map[string]bool{}
			n := 1 + r.IntN(2000)
			for i := range n {
				p := &item{index: -1, ageIndex: -1}
				p.e.Op.Key = fmt.Sprint(i)
				p.e.Next = base.Add(time.Duration(r.IntN(1000)) * time.Millisecond)
				heap.Push(&h, p)
				if r.IntN(100) < int(seed) { // from none to half busy
					busy[p.e.Op.Key] = true
				}
			}
			visits := 0
			isBusy := func(k string) bool { visits++; return busy[k] }
			now := base.Add(time.Duration(r.IntN(1000)) * time.Millisecond)

			var want time.Time
			var wantDue []string
			for _, p := range h {
				if busy[p.e.Op.Key] {
					continue
				}
				if want.IsZero() || p.e.Next.Before(want) {
					want = p.e.Next
				}
				if !p.e.Next.After(now) {
					wantDue = append(wantDue, p.e.Op.Key)
				}
			}
			got := earliestFree(h, isBusy)
			assert.True(t, want.Equal(got), "earliest free: want %v, got %v", want, got)
			// Each op it asks about is the top or a child of a busy one.
			assert.LessOrEqual(t, visits, 2*len(busy)+1, "visits of %d ops", n)

			var gotDue []string
			for _, p := range dueFree(h, now, func(k string) bool { return busy[k] }) {
				gotDue = append(gotDue, p.e.Op.Key)
			}
			slices.Sort(wantDue)
			slices.Sort(gotDue)
			require.Equal(t, wantDue, gotDue)
		})
	}
}
