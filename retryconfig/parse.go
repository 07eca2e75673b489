package retryconfig

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/stormguard/retry"
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
	c := &Config{policies: map[string]*entry{}, budgets: map[string]*budget{}}
	// The document is validated as it is read, in one pass: the policies
	// are read where they lie, each in one pass over its bytes; their names
	// go into the map once all are read, when their number is known.
	type named struct {
		name string
		e    *entry
	}
	var (
		policies []named
		slab     []entry // entries, a chunk at a time: a few allocations for a thousand
		values   memo
	)
	end, err := walkValid(data, skipSpace(data, 0), 0, true, func(key string, v int) (int, error) {
		switch key {
		case "policies":
			end, err := walkValid(data, v, 1, false, func(name string, pv int) (int, error) {
				if name == "" {
					p.add("policies", false, `a policy needs a name; the fallback is named "default"`)
					return skipValue(data, pv, 2)
				}
				if len(slab) == cap(slab) {
					slab = make([]entry, 0, min(max(16, 2*cap(slab)), 1024))
				}
				slab = slab[:len(slab)+1]
				e := &slab[len(slab)-1]
				policies = append(policies, named{name, e})
				return parsePolicy(e, name, data, pv, &values, p)
			})
			if err != nil && !isSyntax(err) {
				p.add("policies", false, "%v", err)
				return skipValue(data, v, 1)
			}
			return end, err
		case "budgets":
			end, err := skipValue(data, v, 1)
			if err == nil {
				parseBudgets(c, data[v:end:end], p)
			}
			return end, err
		default:
			p.add(key, false, "unknown field (want policies or budgets)")
			return skipValue(data, v, 1)
		}
	})
	if err == nil {
		if end = skipSpace(data, end); end != len(data) {
			err = &syntaxError{"data after the value", end}
		}
	}
	if err != nil && !isSyntax(err) {
		// Not an object, or a key twice: the rest is not validated yet.
		if verr := validDocument(data); verr != nil {
			err = verr
		}
	}
	if isSyntax(err) {
		*p = problems{} // invalid JSON is the only problem worth reporting
		p.add("", false, "%v", err)
		return c
	}
	if err != nil {
		p.add("", false, "%v", err)
		return c
	}
	if len(policies) > 8 {
		c.policies = make(map[string]*entry, len(policies))
	}
	for _, n := range policies {
		if _, dup := c.policies[n.name]; dup {
			p.add("policies", false, "%q appears twice", n.name)
			continue
		}
		if n.e.budget != "" { // budgets may come after the policies
			if _, ok := c.budgets[n.e.budget]; !ok {
				p.add("policies."+n.name+".budget", true, "%q is not a member of budgets", n.e.budget)
			}
		}
		c.policies[n.name] = n.e
	}
	return c
}

func parseBudgets(c *Config, raw []byte, p *problems) {
	bs, err := members(raw, nil)
	if err != nil {
		p.add("budgets", false, "%v", err)
		return
	}
	for _, m := range bs {
		path := "budgets." + m.key
		if m.key == "" {
			p.add(path, false, "a budget needs a name")
			continue
		}
		fields, err := members(m.val, nil)
		if err != nil {
			p.add(path, false, "%v", err)
			continue
		}
		b := &budget{maxTokens: 10, tokenRatio: 0.1}
		for _, f := range fields {
			var err error
			switch f.key {
			case "maxTokens":
				b.maxTokens, err = number(f.val)
			case "tokenRatio":
				b.tokenRatio, err = number(f.val)
			default:
				p.add(path+"."+f.key, false, "unknown field (want maxTokens or tokenRatio)")
				continue
			}
			if err != nil {
				p.add(path+"."+f.key, false, "%v", err)
			}
		}
		nb, err := newBudget(b.maxTokens, b.tokenRatio)
		if err != nil {
			p.add(path, false, "%s", err.Error())
			continue
		}
		b.b = nb
		c.budgets[m.key] = b
	}
}

// parsePolicy reads the policy of our format named name, the value at
// data[v:], into e, validating it as JSON at depth 2, and returns the
// offset of its end; an error is a *syntaxError.
func parsePolicy(e *entry, name string, data []byte, v int, m *memo, p *problems) (int, error) {
	bad := false
	end, err := walkValid(data, v, 2, true, func(key string, fv int) (int, error) {
		fend, err := skipValue(data, fv, 3)
		if err != nil {
			return fend, err
		}
		if err := e.set(key, data[fv:fend:fend], m); err != nil {
			bad = true // paths are built only for an error: a thousand concatenations add up
			p.add("policies."+name+"."+key, true, "%v", err)
		}
		return fend, nil
	})
	if err != nil {
		if isSyntax(err) {
			return end, err
		}
		p.add("policies."+name, true, "%v", err)
		return skipValue(data, v, 2)
	}
	if !bad {
		checkPolicy(name, &e.policy, p)
	}
	return end, nil
}

var errUnknownField = errorf("unknown field (want maxAttempts, baseBackoff, factor, maxBackoff, maxElapsed, attemptTimeout, jitter, retryableStatusCodes, budget or hedging)")

// set sets one field of a policy of our format from its JSON value.
// m, if not nil, keeps the values that repeat across the policies of one
// document.
func (e *entry) set(key string, raw []byte, m *memo) error {
	pol := &e.policy
	var err error
	switch key {
	case "maxAttempts":
		var n int
		n, err = integer(raw)
		if err == nil && n == 0 {
			err = errorf("0 is not allowed: write 1 for no retries, or leave the field out for the default (4)")
		}
		if err == nil {
			pol.MaxAttempts = n
		}
	case "baseBackoff":
		pol.BaseBackoff, err = m.duration(raw)
	case "maxBackoff":
		pol.MaxBackoff, err = m.duration(raw)
	case "maxElapsed":
		pol.MaxElapsed, err = m.duration(raw)
	case "attemptTimeout":
		pol.AttemptTimeout, err = m.duration(raw)
	case "factor":
		var x float64
		x, err = number(raw)
		if err == nil && x != 0 && x < 1 {
			err = errorf("%v is below 1: backoffs would shrink", x)
		}
		if err == nil {
			pol.Factor = x
		}
	case "jitter":
		var j jitterText
		if j, err = m.jitter(raw); err == nil {
			pol.Jitter, e.jitter = j.jitter, j.text // as written: Marshal writes its canonical form
		}
	case "retryableStatusCodes":
		var cs codeLists
		if cs, err = m.codeLists(raw); err == nil {
			e.http, e.grpc = cs.http, cs.grpc
		}
	case "budget":
		var s string
		s, err = m.text(raw)
		if err == nil && s == "" {
			err = errorf("the empty name is no budget: leave the field out")
		}
		if err == nil {
			e.budget = s
		}
	case "hedging":
		var h *Hedging
		if h, err = parseHedging(raw, false); err == nil {
			e.hedging = h
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
func parseCodes(raw []byte) (http []int, grpc []uint32, err error) {
	var buf [8]json.RawMessage // the codes of a policy, without an allocation
	els, err := elementsBuf(raw, buf[:0])
	if err != nil {
		return nil, nil, err
	}
	for i, el := range els {
		if http == nil && el[0] != '"' {
			http = make([]int, 0, len(els))
		}
		if len(el) > 0 && el[0] == '"' {
			s, _ := str(el)
			c, ok := grpcCode(s)
			if !ok {
				return nil, nil, errorf("[%d]: %q is not a gRPC code name such as \"UNAVAILABLE\"", i, s)
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
