package loadgen

import "testing"

// Targets of the loopback proofs.
const (
	// MinGoodput is the least share of its capacity that the overloaded
	// server must serve.
	MinGoodput = 0.9
	// MaxP99 is the most the overloaded server's p99 may be, in times the
	// unloaded p99.
	MaxP99 = 3.0
)

// Check fails t where r misses a target, and logs r. Under the race
// detector only the Limiter's word is checked (some requests shed, none
// inside s beyond the limit, most of the capacity served): its timing is
// the race detector's.
func Check(t testing.TB, r Report, s *Server) {
	t.Helper()
	t.Log(r)
	t.Logf("most inside the handler %d, highest limit %d", s.MaxInside(), s.MaxLimit())
	if r.Loaded.Refused == 0 {
		t.Errorf("overloaded, yet nothing was shed")
	}
	if n := s.Over(); n != 0 {
		t.Errorf("%d requests found more inside the handler than the limit", n)
	}
	minGoodput := MinGoodput
	if Race {
		minGoodput = 0.5
	}
	if g := r.GoodputRatio(); g < minGoodput {
		t.Errorf("goodput %.2f of capacity, want ≥ %.2f", g, minGoodput)
	}
	if p := r.P99Ratio(); p > MaxP99 && !Race {
		t.Errorf("admitted p99 %.2f× the unloaded p99, want ≤ %.1f×", p, MaxP99)
	}
}
