package retrytest

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/stormguard/retry"
)

// Seeded returns a Jitter that applies j with draws from a random source
// seeded with seed, in place of Do's own draws: the same seed and the same
// calls give the same waits. It is safe for concurrent use, but calls from
// several goroutines take the draws in whatever order they run.
func Seeded(j retry.Jitter, seed uint64) retry.Jitter {
	return &seeded{j: j, r: rand.New(rand.NewPCG(seed, seed))}
}

type seeded struct {
	j  retry.Jitter
	mu sync.Mutex
	r  *rand.Rand
}

func (s *seeded) Wait(st retry.Step, _ float64) time.Duration {
	s.mu.Lock()
	u := s.r.Float64()
	s.mu.Unlock()
	return s.j.Wait(st, u)
}

// Validate forwards to the wrapped Jitter's Validate, if it has one, so that
// Policy.Validate sees through the wrapper.
func (s *seeded) Validate() error {
	if v, ok := s.j.(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
}
