//go:build !race

package loadgen

// Race reports whether the race detector is on; see race.go.
const Race = false
