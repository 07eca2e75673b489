//go:build race

package loadgen

// Race reports whether the race detector is on: it makes every request
// cost several times the CPU, so that the machine, not the Limiter,
// bounds what is served, and the tests check the Limiter's word (nothing
// inside beyond the limit, shed when overloaded) but not its timing.
const Race = true
