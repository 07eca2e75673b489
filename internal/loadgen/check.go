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

// minRaw is the least the transport must carry, in times the capacity at
// maxWork, for the timing targets to say something of the Limiter rather
// than of the machine.
const minRaw = 5

// Check fails t where r misses a target, and logs r. The Limiter's word
// is always checked: some requests shed and some served, none inside s
// beyond the limit. The timing targets (goodput, p99) are checked where
// the machine leaves the Limiter in charge: not under the race detector,
// and not when the transport alone carried under 5 times what the server
// can do at its longest work (a machine so busy that a request waits for
// the CPU longer than for the server); then they are only logged.
func Check(t testing.TB, r Report, s *Server) {
	t.Helper()
	t.Log(r)
	t.Logf("most inside the handler %d, highest limit %d", s.MaxInside(), s.MaxLimit())
	if r.Loaded.Refused == 0 || r.Loaded.Served == 0 {
		t.Errorf("overloaded: %d served, %d shed; want some of both", r.Loaded.Served, r.Loaded.Refused)
	}
	if n := s.Over(); n != 0 {
		t.Errorf("%d requests found more inside the handler than the limit", n)
	}
	if least := minRaw * float64(s.Slots()) / maxWork.Seconds(); Race || r.Raw.Goodput < least {
		t.Logf("timing targets not checked: race detector %v, transport %.0f/s (want ≥ %.0f/s)", Race, r.Raw.Goodput, least)
		return
	}
	if g := r.GoodputRatio(); g < MinGoodput {
		t.Errorf("goodput %.2f of capacity, want ≥ %.2f", g, MinGoodput)
	}
	if p := r.P99Ratio(); p > MaxP99 {
		t.Errorf("admitted p99 %.2f× the unloaded p99, want ≤ %.1f×", p, MaxP99)
	}
}
