package guard

import "strconv"

// BreakerState is the state of a [Breaker].
type BreakerState uint8

// The states of a Breaker.
const (
	// BreakerClosed: calls go through, and are counted.
	BreakerClosed BreakerState = iota
	// BreakerOpen: every call is refused without being sent.
	BreakerOpen
	// BreakerHalfOpen: Probes first attempts go through; everything else,
	// retries and hedges included, is refused.
	BreakerHalfOpen
)

// String returns "closed", "open" or "half-open".
func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	}
	return "BreakerState(" + strconv.Itoa(int(s)) + ")"
}
