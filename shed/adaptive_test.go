package shed_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/shed"
)

// server is a service of capacity c concurrent requests and a service
// time of 10 ms: beyond c in flight, work shares the CPU, so each
// request's latency grows with the count in flight.
type server struct {
	c        int64
	inflight atomic.Int64
	slower   atomic.Int64 // service time multiplier minus one
}

func (s *server) work() {
	n := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	service := 10 * time.Millisecond * time.Duration(1+s.slower.Load())
	time.Sleep(service * time.Duration(max(n, s.c)) / time.Duration(s.c))
}

// load runs clients that each send, back to back, for d; it returns the
// limit seen at the end and the largest count inside the server.
func load(t *testing.T, l *shed.Limiter, s *server, clients int, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				release, err := l.Acquire(ctx, shed.Critical)
				if err != nil {
					time.Sleep(10 * time.Millisecond) // a shed client's pause
					continue
				}
				s.work()
				release(shed.Success)
			}
		})
	}
	wg.Wait()
}

// Under three times its capacity, an adaptive limit settles near the
// capacity from above and from below: the latency it admits stays within
// Tolerance of the unloaded latency, and the server is kept busy.
func TestAdaptiveLimitFindsCapacity(t *testing.T) {
	t.Parallel()
	// Gradient settles at about Tolerance × capacity + Headroom (26 here,
	// at the default Tolerance 1.1: 1.3× the unloaded latency); AIMD saws
	// between the limit at which latency passes twice its minimum (40) and
	// a tenth below it.
	for _, alg := range []shed.Algorithm{shed.Gradient, shed.AIMD} {
		for _, initial := range []int{2, 100} {
			t.Run(fmt.Sprintf("%d/from%d", alg, initial), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					l := newLimiter(t, shed.Options{Algorithm: alg, InitialLimit: initial, MaxQueue: -1})
					s := &server{c: 20}
					load(t, l, s, 60, 8*time.Second)
					st := l.Stats()
					t.Logf("limit %d, latency %v, minimum %v, admitted %d, shed %d", st.Limit, st.Latency, st.MinLatency, st.Admitted, st.Shed)
					// 20 at a time for 10 ms each, for 8 s: 16,000 at most.
					assert.GreaterOrEqual(t, st.Admitted, uint64(0.8*16000), "the server is kept busy")
					limit, latency := 44, 22*time.Millisecond
					if alg == shed.Gradient {
						limit, latency = 28, 14*time.Millisecond
					}
					assert.LessOrEqual(t, st.Limit, limit, "work does not pile up inside the server")
					assert.LessOrEqual(t, st.Latency, latency)
					require.NotZero(t, st.Shed)
				})
			})
		}
	}
}

// Work that reports Overloaded takes the limit down, whatever its
// latency.
func TestOverloadedShrinksTheLimit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, shed.Options{InitialLimit: 100})
		for range 25 * 10 { // one at a time: the limit is never in use, so no probe

			release, err := l.Acquire(context.Background(), shed.Critical)
			require.NoError(t, err)
			time.Sleep(time.Millisecond)
			release(shed.Overloaded)
		}
		assert.Equal(t, 34, l.Stats().Limit, "ten windows, a tenth off each: 100 × 0.9^10")
	})
}

// Ignored work is no sample: a thousand slow cancels leave the limit
// alone.
func TestIgnoredIsNoSample(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, shed.Options{InitialLimit: 30})
		for range 1000 {
			release, err := l.Acquire(context.Background(), shed.Critical)
			require.NoError(t, err)
			time.Sleep(time.Second)
			release(shed.Ignored)
		}
		assert.Equal(t, 30, l.Stats().Limit)
		assert.Zero(t, l.Stats().Latency)
	})
}

// A service that gets slower for good (a heavier dependency, a bigger
// working set) keeps its throughput: the next probe measures the new
// unloaded latency, and the limit comes back to the capacity. Without
// probes the old minimum would hold the limit down for ever.
func TestMinimumFollowsASlowerService(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, shed.Options{MaxQueue: -1})
		s := &server{c: 20}
		load(t, l, s, 60, 5*time.Second)
		s.slower.Store(1) // 20 ms from now on
		load(t, l, s, 60, 20*time.Second)
		st := l.Stats()
		assert.Equal(t, 20*time.Millisecond, st.MinLatency)
		assert.GreaterOrEqual(t, st.Limit, 16, "the server is kept busy again")
	})
}
