package retryconfig

import (
	"time"

	"github.com/stormguard/retry/guard"
)

// breakerParams are the fields of a member of "breakers", those of
// guard.BreakerOptions but its Clock; a field left out is zero, which
// stands for the default. Unlike BreakerOptions, they can be compared, so
// that Live can tell an unchanged breaker.
type breakerParams struct {
	failureRatio  float64
	minCalls      int
	window        time.Duration
	openFor       time.Duration
	probes        int
	countAttempts bool
}

func (b breakerParams) options() guard.BreakerOptions {
	return guard.BreakerOptions{FailureRatio: b.failureRatio, MinCalls: b.minCalls, Window: b.window,
		OpenFor: b.openFor, Probes: b.probes, CountAttempts: b.countAttempts}
}

// breakerFields set each field of breakerParams from its value.
var breakerFields = map[string]func(*breakerParams, *value) error{
	"failureRatio":  func(b *breakerParams, v *value) (err error) { b.failureRatio, err = number(v); return err },
	"minCalls":      func(b *breakerParams, v *value) (err error) { b.minCalls, err = integer(v); return err },
	"window":        func(b *breakerParams, v *value) (err error) { b.window, err = durationJSON(v); return err },
	"openFor":       func(b *breakerParams, v *value) (err error) { b.openFor, err = durationJSON(v); return err },
	"probes":        func(b *breakerParams, v *value) (err error) { b.probes, err = integer(v); return err },
	"countAttempts": func(b *breakerParams, v *value) (err error) { b.countAttempts, err = boolean(v); return err },
}

// breakerKind reads the members of "breakers".
var breakerKind = guardKind[breakerParams, guard.Breaker]{
	name: "breakers",
	one:  "breaker",
	set: func(b *breakerParams, key string, v *value) error {
		set, ok := breakerFields[key]
		if !ok {
			return errorf("unknown field (want failureRatio, minCalls, window, openFor, probes or countAttempts)")
		}
		// The field alone, checked by guard.NewBreaker, so that the
		// error names the field and the rules stay retry's.
		var one breakerParams
		if err := set(&one, v); err != nil {
			return err
		}
		if one == (breakerParams{}) && key != "countAttempts" {
			return errZeroDefault
		}
		if _, err := guard.NewBreaker(one.options()); err != nil {
			return optionError(err, "BreakerOptions."+goName(key))
		}
		return set(b, v)
	},
	build: func(b breakerParams) (*guard.Breaker, error) { return guard.NewBreaker(b.options()) },
}

// errZeroDefault rejects a zero that the options of a guard would take for
// their default, which a reader of the document would not guess.
var errZeroDefault = errorf("0 would stand for the default: leave the field out for it")

// appendBreaker writes a member of "breakers", its fields at zero left out.
func appendBreaker(b []byte, p breakerParams) []byte {
	w := fields{b: append(b, '{')}
	w.float("failureRatio", p.failureRatio)
	w.int("minCalls", p.minCalls)
	w.duration("window", p.window)
	w.duration("openFor", p.openFor)
	w.int("probes", p.probes)
	if p.countAttempts {
		w.key("countAttempts")
		w.b = append(w.b, "true"...)
	}
	return append(w.b, '}')
}
