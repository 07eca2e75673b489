package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQueuePopsInTimeOrderAndTiesFirstInFirstOut(t *testing.T) {
	t.Parallel()
	var q queue
	q.After(30, 0, 0, 0)
	q.After(10, 0, 1, 0)
	q.After(20, 0, 2, 0)
	q.After(10, 0, 3, 0) // same time as client 1, scheduled later
	q.After(0, 0, 4, 0)

	var order []int32
	var times []time.Duration
	for e, ok := q.Pop(); ok; e, ok = q.Pop() {
		order = append(order, e.client)
		times = append(times, q.Now())
	}
	assert.Equal(t, []int32{4, 1, 3, 2, 0}, order)
	assert.Equal(t, []time.Duration{0, 10, 10, 20, 30}, times)
	assert.Equal(t, 0, q.Len())
}

func TestQueueSchedulesRelativeToNow(t *testing.T) {
	t.Parallel()
	var q queue
	q.After(100, 1, 0, 42)
	e, ok := q.Pop()
	require.True(t, ok)
	assert.Equal(t, event{at: 100, seq: 1, kind: 1, client: 0, arg: 42}, e)

	q.After(5, 2, 7, 0) // from now = 100
	e, _ = q.Pop()
	assert.Equal(t, time.Duration(105), e.at)
	assert.Equal(t, time.Duration(105), q.Now())

	_, ok = q.Pop()
	assert.False(t, ok, "Pop on an empty queue")
	assert.Equal(t, time.Duration(105), q.Now(), "an empty Pop moved the clock")
}

func TestQueueRefusesThePast(t *testing.T) {
	t.Parallel()
	var q queue
	assert.PanicsWithValue(t, "stormsim: event scheduled 1ns in the past", func() { q.After(-1, 0, 0, 0) })
}

func TestQueueResetKeepsNothing(t *testing.T) {
	t.Parallel()
	var q queue
	q.After(5, 0, 0, 0)
	q.After(6, 0, 0, 0)
	q.Pop()
	q.reset()
	assert.Equal(t, 0, q.Len())
	assert.Equal(t, time.Duration(0), q.Now())
	q.After(1, 0, 9, 0)
	e, _ := q.Pop()
	assert.Equal(t, event{at: 1, seq: 1, client: 9}, e)
}

// TestQueueMatchesASort checks the heap against a stable sort of the same
// events, many times over, times drawn from a narrow range to force ties.
func TestQueueMatchesASort(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var q queue
		var want []event
		for i := range rng.IntN(100) {
			d := time.Duration(rng.IntN(20))
			q.After(d, 0, i, 0)
			want = append(want, event{at: d, seq: uint64(i + 1), client: int32(i)})
		}
		slices.SortStableFunc(want, func(a, b event) int { return int(a.at - b.at) })
		var got []event
		for e, ok := q.Pop(); ok; e, ok = q.Pop() {
			got = append(got, e)
		}
		require.Equal(t, want, got)
	}
}
