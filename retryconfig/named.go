package retryconfig

import "strings"

// A document declares guards by name, each kind in an object of its own:
// "budgets" (guard.Budget), "breakers" (guard.Breaker) and "throttles"
// (guard.Throttle). A policy names at most one of each, and every policy
// that names one shares it. The kinds differ only in their fields; how
// they are read, bound to policies, carried across a reload and checked
// is written here once for all three.

// named is one named guard of a document: its parameters as the document
// wrote them, and the object made from them, which Live hands on to the
// next Config when they did not change.
type named[P comparable, G any] struct {
	params P
	g      *G
}

// guards are the guards of one kind of a Config, by name.
type guards[P comparable, G any] map[string]*named[P, G]

// get returns the object of the guard named name, or nil for the empty
// name or one that gs lacks.
func (gs guards[P, G]) get(name string) *G {
	if g, ok := gs[name]; ok && name != "" {
		return g.g
	}
	return nil
}

// carry gives each guard of gs whose parameters are those of the guard of
// the same name in prev that guard's object, so that its state (tokens, an
// open breaker, a throttle's counts) survives a reload. A guard that gs
// shares with prev, as a Config that Overrides made shares its base's, is
// never written: the published Config may be reading it.
func (gs guards[P, G]) carry(prev guards[P, G]) {
	for name, g := range gs {
		if o, ok := prev[name]; ok && o.g != g.g && o.params == g.params {
			g.g = o.g
		}
	}
}

// guardKind describes one kind of guard for parseGuards.
type guardKind[P comparable, G any] struct {
	name  string                         // of the object that holds them: "breakers"
	one   string                         // the name of one of them: "breaker"
	zero  P                              // the parameters of a guard with no fields
	set   func(*P, string, *value) error // sets one field from its value
	build func(P) (*G, error)            // makes the object; its error is reported at the guard
}

// parseGuards reads the object of named guards of kind k, v, and reports
// each problem at its path, such as "breakers.payments.failureRatio".
func parseGuards[P comparable, G any](k guardKind[P, G], v *value, p *problems) guards[P, G] {
	gs := guards[P, G]{}
	ms, err := object(v)
	if err != nil {
		p.add(k.name, false, "%v", err)
		return gs
	}
	for _, m := range ms {
		if m.key == "" {
			p.add(k.name, false, "a %s needs a name", k.one)
			continue
		}
		path := k.name + "." + m.key
		fields, err := object(m.val)
		if err != nil {
			p.add(path, false, "%v", err)
			continue
		}
		params, bad := k.zero, false
		for _, f := range fields {
			if err := k.set(&params, f.key, f.val); err != nil {
				p.addGuard(path+"."+f.key, "%v", err)
				bad = true
			}
		}
		if bad {
			// Declared, though invalid: a policy that names it is not
			// told again that it is missing.
			gs[m.key] = &named[P, G]{params: params}
			continue
		}
		g, err := k.build(params)
		if err != nil {
			p.addGuard(path, "%v", err)
			gs[m.key] = &named[P, G]{params: params}
			continue
		}
		gs[m.key] = &named[P, G]{params: params, g: g}
	}
	return gs
}

// checkRefs reports each guard that the policy named name names and c
// does not declare, and returns whether there was none.
func (c *Config) checkRefs(name string, e *entry, p *problems) bool {
	ok := true
	ref := func(field, target string, declared bool) {
		if target != "" && !declared {
			p.add("policies."+name+"."+field, true, "%q is not a member of %ss", target, field)
			ok = false
		}
	}
	ref("budget", e.budget, c.budgets[e.budget] != nil)
	ref("breaker", e.breaker, c.breakers[e.breaker] != nil)
	ref("throttle", e.throttle, c.throttles[e.throttle] != nil)
	return ok
}

// guardName reads the name of a guard that a policy's field gives.
func guardName(v *value, kind string) (string, error) {
	s, err := str(v)
	if err == nil && s == "" {
		err = errorf("the empty name is no %s: leave the field out", kind)
	}
	return s, err
}

// optionError words an error of guard.NewBreaker or guard.NewThrottle
// about the option of a field alone, "guard: invalid options:
// BreakerOptions.FailureRatio 1.5 is not in (0, 1]", for the field's path:
// "1.5 is not in (0, 1]". Only the wording depends on the text; the check
// is package guard's own.
func optionError(err error, option string) error {
	msg := err.Error()
	if _, after, ok := strings.Cut(msg, option+" "); ok {
		msg = after
	}
	return errorf("%s", msg)
}

// goName is the name of the option that a field of a document stands for:
// "FailureRatio" for "failureRatio".
func goName(field string) string {
	return strings.ToUpper(field[:1]) + field[1:]
}
