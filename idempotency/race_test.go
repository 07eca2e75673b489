//go:build race

package idempotency_test

// raceEnabled is set under the race detector, whose instrumentation
// allocates too: allocation counts are checked without it.
const raceEnabled = true
