package retryconfig

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that reads and writes itself as text in Go's
// form ("200ms", "1.5s", "0.2s"), rejecting a number without a unit. It
// implements encoding.TextMarshaler and encoding.TextUnmarshaler, so one
// type works for JSON, YAML, environment variables and flag.TextVar:
//
//	var backoff retryconfig.Duration
//	flag.TextVar(&backoff, "payments-max-backoff", retryconfig.Duration(0), "…")
//
// The text it writes does not depend on the Go release, unlike
// encoding/json's handling of time.Duration.
type Duration time.Duration

// String returns d in Go's form, as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) {
	return []byte(time.Duration(d).String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler. A negative duration
// is an error: no wait or timeout of a policy can be negative.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := parseDuration(string(text))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// parseDuration reads a duration written as text, such as the value of a
// JSON string, an environment variable or a flag.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(strings.TrimSpace(s), 64); nerr == nil {
			return 0, fmt.Errorf("%q has no unit: write one, such as \"%ss\" or \"%sms\"", s, strings.TrimSpace(s), strings.TrimSpace(s))
		}
		return 0, fmt.Errorf("%q is not a duration such as \"200ms\" or \"1.5s\"", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

// durationJSON reads a duration from a JSON value, which must be a string:
// a bare number would leave the unit to guesswork (seconds in proto3,
// nanoseconds in encoding/json).
func durationJSON(v *value) (time.Duration, error) {
	if v.kind == kindNumber {
		return 0, fmt.Errorf("%s is a bare number: write a duration with a unit as a string, such as \"%ss\"", describe(v), describe(v))
	}
	s, err := str(v)
	if err != nil {
		return 0, err
	}
	return parseDuration(s)
}
