package retrydebug

import "slices"

// named is a value registered with a Recorder under a name: an outbox, a
// Limiter, a breaker or a throttle.
type named[T any] struct {
	name string
	v    T
}

// setNamed sets the entry of list for name to v, or removes it when
// remove. A new name past max entries is ignored, so that a value
// registered per request cannot grow the Recorder. The caller holds the
// lock that guards list.
func setNamed[T any](list *[]named[T], name string, v T, remove bool, max int) {
	i := slices.IndexFunc(*list, func(n named[T]) bool { return n.name == name })
	switch {
	case i >= 0 && remove:
		*list = slices.Delete(*list, i, i+1)
	case i >= 0:
		(*list)[i].v = v
	case !remove && len(*list) < max:
		*list = append(*list, named[T]{name, v})
	}
}
