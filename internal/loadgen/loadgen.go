// Package loadgen is the load of the loopback tests of server-side load
// shedding (package shed over HTTP, retrygrpc over bufconn): a server with
// a real capacity, and many clients that each call it in a closed loop, so
// that both transports are measured by the same rule.
//
// The measures are relative: a test calibrates on the machine it runs on
// (an unloaded run for the latency, a run at the server's concurrency for
// its capacity) and compares the overloaded run with those, so that a slow
// or busy machine (the race detector, two shared cores) moves the
// references and the results alike.
package loadgen

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Server is work with a real capacity: at most Slots requests at once, each
// busy for Work; the others wait for a slot, as threads of a pool do.
type Server struct {
	sem          chan struct{}
	work         atomic.Int64 // time.Duration
	raw          atomic.Bool  // see SetRaw
	inside, most atomic.Int64
	limit        atomic.Pointer[func() int] // see Watch

	mu             sync.Mutex
	maxLimit, over int
}

// NewServer returns a Server of slots slots and work per request.
func NewServer(slots int, work time.Duration) *Server {
	s := &Server{sem: make(chan struct{}, slots)}
	s.work.Store(int64(work))
	return s
}

// Slots is the Server's capacity in requests at once.
func (s *Server) Slots() int { return cap(s.sem) }

// SetWork sets each request's work from now on.
func (s *Server) SetWork(d time.Duration) { s.work.Store(int64(d)) }

// Work is each request's work.
func (s *Server) Work() time.Duration { return time.Duration(s.work.Load()) }

// SetRaw makes the server, while on, answer at once, past its Limiter and
// its work: what the transport alone costs. Raw tells the handler.
func (s *Server) SetRaw(on bool) { s.raw.Store(on) }

// Raw reports whether SetRaw is on.
func (s *Server) Raw() bool { return s.raw.Load() }

// Watch makes Serve read limit(), a Limiter's limit, on each entry, so
// that Over counts the entries that found more requests inside than any
// limit read so far.
func (s *Server) Watch(limit func() int) { s.limit.Store(&limit) }

// Serve does one request's work, or returns ctx's error if ctx ends while
// it waits for a slot.
func (s *Server) Serve(ctx context.Context) error {
	n := s.inside.Add(1)
	defer s.inside.Add(-1)
	for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
	}
	if limit := s.limit.Load(); limit != nil {
		lim := (*limit)()
		s.mu.Lock()
		s.maxLimit = max(s.maxLimit, lim)
		if int(n) > s.maxLimit {
			s.over++
		}
		s.mu.Unlock()
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	time.Sleep(s.Work())
	<-s.sem
	return nil
}

// MaxInside is the most requests that were inside Serve at once.
func (s *Server) MaxInside() int { return int(s.most.Load()) }

// MaxLimit is the highest limit Watch's func gave on an entry.
func (s *Server) MaxLimit() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxLimit
}

// Over counts the entries that found more requests inside than any limit
// read so far: 0 when the Limiter kept its word.
func (s *Server) Over() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.over
}

// Recorder collects the attempts of a run: each one's latency and whether
// the server served it. It is safe for concurrent use.
type Recorder struct {
	mu       sync.Mutex
	from, to time.Time // the window: attempts that end in it count
	served   []time.Duration
	refused  int
}

// Attempt records an attempt begun at start that ended now, served or
// refused (shed).
func (r *Recorder) Attempt(start time.Time, served bool) {
	end := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if end.Before(r.from) || !end.Before(r.to) {
		return
	}
	if served {
		r.served = append(r.served, end.Sub(start))
	} else {
		r.refused++
	}
}

// Result is what a run measured in its window.
type Result struct {
	// Goodput is the attempts served per second.
	Goodput float64
	// Offered is the attempts per second, served or refused.
	Offered float64
	// Served and Refused count the attempts.
	Served, Refused int
	// P50, P99 and Mean are of the served attempts' latencies.
	P50, P99, Mean time.Duration
}

// Run runs clients clients for d, each calling call in a loop and pausing
// think after each call; what ends in the window after warmup counts.
// call gets the client's number and a ctx that ends with the run; it must
// record its attempts in rec.
func Run(ctx context.Context, rec *Recorder, clients int, think, warmup, d time.Duration, call func(ctx context.Context, client int)) Result {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	rec.mu.Lock()
	rec.from, rec.to, rec.served, rec.refused = start.Add(warmup), start.Add(d), nil, 0
	rec.mu.Unlock()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				call(ctx, i)
				if think > 0 {
					select {
					case <-time.After(think):
					case <-ctx.Done():
					}
				}
			}
		})
	}
	time.Sleep(time.Until(start.Add(d)))
	cancel()
	wg.Wait()

	rec.mu.Lock()
	defer rec.mu.Unlock()
	secs := (d - warmup).Seconds()
	res := Result{Served: len(rec.served), Refused: rec.refused}
	res.Goodput = float64(res.Served) / secs
	res.Offered = float64(res.Served+res.Refused) / secs
	if len(rec.served) > 0 {
		lat := slices.Clone(rec.served)
		slices.Sort(lat)
		var sum time.Duration
		for _, l := range lat {
			sum += l
		}
		res.Mean = sum / time.Duration(len(lat))
		res.P50 = lat[len(lat)/2]
		res.P99 = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return res
}
