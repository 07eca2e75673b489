package retryconfig

import (
	"fmt"
	"math"
	"regexp"
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

// protoDurationRE is proto3's JSON form of a Duration, the only one a
// service config holds: decimal seconds, at most 9 fractional digits, and
// an "s". grpc-go rejects a whole config for anything else ("100ms").
var protoDurationRE = regexp.MustCompile(`^-?[0-9]+(\.[0-9]{1,9})?s$`)

// maxProtoSeconds is proto3's largest Duration, 10,000 years.
const maxProtoSeconds = 315576000000

// protoDuration reads a service config's duration as grpc-go does: only
// proto3's form, up to proto3's range, saturating at the longest
// time.Duration (grpc-go's own rule) rather than overflow.
func protoDuration(v *value) (time.Duration, error) {
	if v.kind == kindNumber {
		return 0, fmt.Errorf("%s is a bare number: a service config writes a duration as a string of seconds, such as \"%ss\"", describe(v), describe(v))
	}
	s, err := str(v)
	if err != nil {
		return 0, err
	}
	if !protoDurationRE.MatchString(s) {
		return 0, fmt.Errorf("%q is not a proto3 duration: decimal seconds and an s, such as \"0.2s\"", s)
	}
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(s, "-"), "s"), ".")
	secs, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || secs > maxProtoSeconds {
		return 0, fmt.Errorf("%q is past proto3's range of %d seconds", s, maxProtoSeconds)
	}
	if neg {
		return 0, fmt.Errorf("%q is negative", s)
	}
	nanos, _ := strconv.ParseUint((frac + "000000000")[:9], 10, 64)
	if secs > uint64(math.MaxInt64/int64(time.Second))-1 {
		return time.Duration(math.MaxInt64), nil // as grpc-go: saturated
	}
	d := time.Duration(secs)*time.Second + time.Duration(nanos)
	if d < 0 {
		return time.Duration(math.MaxInt64), nil
	}
	return d, nil
}
