package retryconfig

import (
	"time"

	"github.com/stormguard/retry/guard"
)

// throttleParams are the fields of a member of "throttles", those of
// guard.ThrottleOptions but its Clock and Rand; a field left out is zero,
// which stands for the default. Unlike ThrottleOptions, they can be
// compared, so that Live can tell an unchanged throttle.
type throttleParams struct {
	k           float64
	window      time.Duration
	minRequests int
	maxReject   float64
}

func (t throttleParams) options() guard.ThrottleOptions {
	return guard.ThrottleOptions{K: t.k, Window: t.window, MinRequests: t.minRequests, MaxReject: t.maxReject}
}

// throttleFields set each field of throttleParams from its value.
var throttleFields = map[string]func(*throttleParams, *value) error{
	"k":           func(t *throttleParams, v *value) (err error) { t.k, err = number(v); return err },
	"window":      func(t *throttleParams, v *value) (err error) { t.window, err = durationJSON(v); return err },
	"minRequests": func(t *throttleParams, v *value) (err error) { t.minRequests, err = integer(v); return err },
	"maxReject":   func(t *throttleParams, v *value) (err error) { t.maxReject, err = number(v); return err },
}

// throttleKind reads the members of "throttles".
var throttleKind = guardKind[throttleParams, guard.Throttle]{
	name: "throttles",
	one:  "throttle",
	set: func(t *throttleParams, key string, v *value) error {
		set, ok := throttleFields[key]
		if !ok {
			return errorf("unknown field (want k, window, minRequests or maxReject)")
		}
		// The field alone, checked by guard.NewThrottle, as for breakers.
		var one throttleParams
		if err := set(&one, v); err != nil {
			return err
		}
		if one == (throttleParams{}) {
			return errZeroDefault
		}
		if _, err := guard.NewThrottle(one.options()); err != nil {
			return optionError(err, "ThrottleOptions."+goName(key))
		}
		return set(t, v)
	},
	build: func(t throttleParams) (*guard.Throttle, error) { return guard.NewThrottle(t.options()) },
}

// appendThrottle writes a member of "throttles", its fields at zero left
// out.
func appendThrottle(b []byte, p throttleParams) []byte {
	w := fields{b: append(b, '{')}
	w.float("k", p.k)
	w.duration("window", p.window)
	w.int("minRequests", p.minRequests)
	w.float("maxReject", p.maxReject)
	return append(w.b, '}')
}
