package retryconfig

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/chaos"
)

// Parse reads a document of named policies (see the package doc) and
// validates all of it: any problem anywhere rejects the whole document, with
// an error that names the path of each problem (up to ten of them). An
// unknown field is a problem, so that a typo cannot silently leave a
// default in place. Errors about a policy's fields match
// retry.ErrInvalidPolicy.
func Parse(data []byte) (*Config, error) {
	var p problems
	c := parseDoc(data, &p)
	if err := p.err("invalid document"); err != nil {
		return nil, err
	}
	c.bind()
	return c, nil
}

func parseDoc(data []byte, p *problems) *Config {
	c := &Config{}
	root, err := decode(data)
	if err != nil { // invalid JSON is the only problem worth reporting
		p.add("", false, "%v", err)
		return c
	}
	top, err := object(root)
	if err != nil {
		p.add("", false, "%v", err)
		return c
	}
	type named struct {
		name string
		e    *entry
	}
	var policies []named
	for _, m := range top {
		switch m.key {
		case "policies":
			if m.val.kind != kindObject {
				p.add("policies", false, "%s is not an object", describe(m.val))
				continue
			}
			// Duplicate names are found below, in the map they go into,
			// so that the policies around them are still validated.
			for _, pm := range m.val.members {
				if pm.key == "" {
					p.add("policies", false, `a policy needs a name; the fallback is named "default"`)
					continue
				}
				e := &entry{}
				parsePolicy(e, pm.key, pm.val, p)
				policies = append(policies, named{pm.key, e})
			}
		case "budgets":
			c.budgets = parseGuards(budgetKind, m.val, p)
		case "breakers":
			c.breakers = parseGuards(breakerKind, m.val, p)
		case "throttles":
			c.throttles = parseGuards(throttleKind, m.val, p)
		default:
			p.add(m.key, false, "unknown field (want policies, budgets, breakers or throttles)")
		}
	}
	c.policies = make(map[string]*entry, len(policies))
	for _, n := range policies {
		if _, dup := c.policies[n.name]; dup {
			p.add("policies", false, "%q appears twice", n.name)
			continue
		}
		c.checkRefs(n.name, n.e, p) // the guards may come after the policies
		c.policies[n.name] = n.e
	}
	return c
}

// parsePolicy reads the policy of our format named name, the value v, into
// e.
func parsePolicy(e *entry, name string, v *value, p *problems) {
	fields, err := object(v)
	if err != nil {
		p.add("policies."+name, true, "%v", err)
		return
	}
	bad := false
	for _, f := range fields {
		if err := e.set(f.key, f.val); err != nil {
			bad = true
			if f.key == "chaos" {
				p.addFault("policies."+name+"."+f.key, "%v", err)
			} else {
				p.add("policies."+name+"."+f.key, true, "%v", err)
			}
		}
	}
	if !bad {
		checkPolicy(name, &e.policy, p)
	}
}

var errUnknownField = errorf("unknown field (want maxAttempts, baseBackoff, factor, maxBackoff, maxElapsed, attemptTimeout, jitter, retryableStatusCodes, quota, budget, breaker, throttle, hedging, staleIfError or chaos)")

// set sets one field of a policy of our format from its JSON value.
func (e *entry) set(key string, v *value) error {
	pol := &e.policy
	var err error
	switch key {
	case "maxAttempts":
		var n int
		n, err = integer(v)
		if err == nil && n == 0 {
			err = errorf("0 is not allowed: write 1 for no retries, or leave the field out for the default (4)")
		}
		if err == nil {
			pol.MaxAttempts = n
		}
	case "baseBackoff":
		pol.BaseBackoff, err = durationJSON(v)
	case "maxBackoff":
		pol.MaxBackoff, err = durationJSON(v)
	case "maxElapsed":
		pol.MaxElapsed, err = durationJSON(v)
	case "attemptTimeout":
		pol.AttemptTimeout, err = durationJSON(v)
	case "factor":
		var x float64
		x, err = number(v)
		if err == nil && x != 0 && x < 1 {
			err = errorf("%v is below 1: backoffs would shrink", x)
		}
		if err == nil {
			pol.Factor = x
		}
	case "jitter":
		var (
			s string
			j retry.Jitter
		)
		if s, err = str(v); err == nil {
			j, err = parseJitter(s)
		}
		if err == nil {
			pol.Jitter, e.jitter = j, s // as written: Marshal writes its canonical form
		}
	case "retryableStatusCodes":
		var (
			http []int
			grpc []uint32
		)
		if http, grpc, err = parseCodes(v); err == nil {
			e.http, e.grpc = http, grpc
		}
	case "quota":
		var s string
		if s, err = str(v); err == nil && !slices.Contains(QuotaModes(), s) {
			err = errorf("%q is not a quota mode (want hold, spread or off)", s)
		}
		if err == nil {
			e.quota = s
		}
	case "budget":
		var s string
		if s, err = guardName(v, key); err == nil {
			e.budget = s
		}
	case "breaker":
		var s string
		if s, err = guardName(v, key); err == nil {
			e.breaker = s
		}
	case "throttle":
		var s string
		if s, err = guardName(v, key); err == nil {
			e.throttle = s
		}
	case "hedging":
		var h *Hedging
		if h, err = parseHedging(v, false); err == nil {
			e.hedging = h
		}
	case "staleIfError":
		var d time.Duration
		if d, err = parseStaleIfError(v); err == nil {
			e.staleIfError = d
		}
	case "chaos":
		var fs []chaos.Fault
		if fs, err = parseChaos(v); err == nil {
			e.chaos = fs
		}
	default:
		return errUnknownField
	}
	return err
}

// checkPolicy runs the checks that span fields, naming the fields as the
// document does, then Policy.Validate for anything else.
func checkPolicy(name string, pol *retry.Policy, p *problems) {
	if pol.MaxBackoff != 0 && pol.BaseBackoff > pol.MaxBackoff {
		p.add("policies."+name+".maxBackoff", true, "%v is below baseBackoff %v", pol.MaxBackoff, pol.BaseBackoff)
		return
	}
	if pol.MaxAttempts < 0 && pol.MaxElapsed == 0 {
		p.add("policies."+name+".maxAttempts", true, "%d (no limit) needs maxElapsed, or nothing ends the loop", pol.MaxAttempts)
		return
	}
	if err := pol.Validate(); err != nil {
		p.add("policies."+name, true, "%s", strings.TrimPrefix(err.Error(), retry.ErrInvalidPolicy.Error()+": "))
	}
}

// parseJitter reads a jitter's name.
func parseJitter(s string) (retry.Jitter, error) {
	switch s {
	case "full":
		return retry.FullJitter, nil
	case "equal":
		return retry.EqualJitter, nil
	case "decorrelated":
		return retry.DecorrelatedJitter, nil
	case "none":
		return retry.NoJitter, nil
	}
	if x, ok, err := bandSpread(s); ok {
		return retry.BandJitter(x), err
	}
	return nil, errorf("%q is not a jitter (want full, equal, decorrelated, none or band:<spread>)", s)
}

// bandSpread reads the spread of "band:<spread>", if s is one.
func bandSpread(s string) (float64, bool, error) {
	spread, ok := strings.CutPrefix(s, "band:")
	if !ok {
		return 0, false, nil
	}
	x, err := strconv.ParseFloat(spread, 64)
	if err != nil || !(x >= 0 && x <= 1) {
		return 0, true, errorf("%q: the spread after band: must be a number in [0, 1], such as \"band:0.3\"", s)
	}
	return x, true, nil
}

// canonicalJitter is the text Marshal writes for a jitter that parseJitter
// accepted: "band:0.30" as "band:0.3", so that Marshal's output does not
// depend on how the spread was written.
func canonicalJitter(s string) string {
	if x, ok, err := bandSpread(s); ok && err == nil {
		return "band:" + strconv.FormatFloat(x, 'g', -1, 64)
	}
	return s
}

// parseCodes reads retryableStatusCodes: numbers are HTTP statuses,
// strings gRPC code names.
func parseCodes(v *value) (http []int, grpc []uint32, err error) {
	els, err := elements(v)
	if err != nil {
		return nil, nil, err
	}
	for i, el := range els {
		if el.kind == kindString {
			c, ok := grpcCode(el.text)
			if !ok {
				return nil, nil, errorf("[%d]: %q is not a gRPC code name such as \"UNAVAILABLE\"", i, el.text)
			}
			grpc = append(grpc, c)
			continue
		}
		n, err := integer(el)
		if err != nil || n < 100 || n > 599 {
			return nil, nil, errorf("[%d]: %s is not an HTTP status (100 to 599) or a gRPC code name", i, describe(el))
		}
		http = append(http, n)
	}
	if http == nil && grpc == nil {
		return nil, nil, errorf("the list is empty: list the codes to retry, or leave the field out for the default")
	}
	return http, grpc, nil
}
