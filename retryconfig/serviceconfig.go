package retryconfig

import (
	"fmt"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
)

// ThrottlingBudget is the name of the budget that a service config's
// retryThrottling becomes: one guard.Budget that every method of the config
// shares, as gRFC A6 throttles retries per server, not per method.
const ThrottlingBudget = "retryThrottling"

// ParseServiceConfig reads a gRPC service config (gRFC A6) into a Config.
//
// Each name of a methodConfig becomes a policy: {"service": "pkg.Svc",
// "method": "M"} is "/pkg.Svc/M", {"service": "pkg.Svc"} is "/pkg.Svc/" (the
// whole service), and the empty name is "default". A method with no
// matching name makes one attempt, as in grpc-go: without an empty name,
// the Config's "default" is {"maxAttempts": 1}.
//
// A retryPolicy follows A6: maxAttempts must be above 1 and is capped at 5;
// initialBackoff and maxBackoff are positive durations and
// backoffMultiplier a number of at least 1 (this library's backoffs never
// shrink); retryableStatusCodes is a non-empty list of code names (or
// numbers). Its backoff is A6's, full jitter: BaseBackoff initialBackoff,
// Factor backoffMultiplier, MaxBackoff maxBackoff. The codes are those of
// [Config.GRPCCodes]. A methodConfig's timeout becomes the policy's
// MaxElapsed.
//
// A hedgingPolicy is parsed and validated (maxAttempts above 1, capped at
// 5; hedgingDelay; nonFatalStatusCodes) and kept for [Config.Hedging]; its
// policy makes one attempt of its own, as A6 allows a method a retryPolicy
// or a hedgingPolicy, not both. Sending the hedged copies is up to the gRPC
// integration.
//
// retryThrottling becomes the budget named [ThrottlingBudget], shared by
// every policy of the Config; its maxTokens is at most 1000, as in A6.
//
// It reads a config as grpc-go does, so that a file it accepts is one
// grpc-go accepts and means the same: durations are proto3's JSON form
// only (decimal seconds, at most nine fractional digits and an "s", up to
// 315576000000s, saturating past time.Duration's range), so "100ms" is an
// error; a null member is absent (protojson writes them); and a
// maxAttempts of any whole number above 5 is 5.
//
// An invalid config is rejected whole, with path-named errors such as
// `methodConfig[0].retryPolicy.maxAttempts: 1 must be above 1`. Unknown
// fields are ignored, as gRFC A21 says for service configs, so that a
// config written for a newer gRPC still loads.
func ParseServiceConfig(data []byte) (*Config, error) {
	var p problems
	c := &Config{policies: map[string]*entry{}, service: true}
	root, err := decode(data)
	var top []member
	if err == nil {
		top, err = object(root)
	}
	if err != nil {
		p.add("", false, "%v", err)
		return nil, p.err("invalid service config")
	}
	for _, m := range top {
		if isNull(m.val) {
			continue // a null member is an absent one
		}
		switch m.key {
		case "methodConfig":
			mcs, err := elements(m.val)
			if err != nil {
				p.add("methodConfig", false, "%v", err)
				continue
			}
			for i, mc := range mcs {
				parseMethodConfig(c, fmt.Sprintf("methodConfig[%d]", i), mc, &p)
			}
		case "retryThrottling":
			parseThrottling(c, m.val, &p)
		}
	}
	if err := p.err("invalid service config"); err != nil {
		return nil, err
	}
	if _, ok := c.policies[DefaultName]; !ok {
		c.policies[DefaultName] = &entry{policy: retry.Policy{MaxAttempts: 1}}
	}
	if _, ok := c.budgets[ThrottlingBudget]; ok {
		for _, e := range c.policies {
			e.budget = ThrottlingBudget
		}
	}
	c.bind()
	return c, nil
}

func parseThrottling(c *Config, v *value, p *problems) {
	const path = "retryThrottling"
	fields, err := object(v)
	if err != nil {
		p.add(path, false, "%v", err)
		return
	}
	var b budgetParams
	for _, f := range fields {
		var err error
		switch f.key {
		case "maxTokens":
			b.maxTokens, err = number(f.val)
			if err == nil && !(b.maxTokens > 0 && b.maxTokens <= 1000) {
				err = errorf("%v is not in (0, 1000]", b.maxTokens)
			}
		case "tokenRatio":
			b.tokenRatio, err = number(f.val)
			if err == nil && !(b.tokenRatio > 0) {
				err = errorf("%v is not positive", b.tokenRatio)
			}
		default:
			continue
		}
		if err != nil {
			p.add(path+"."+f.key, false, "%v", err)
			return
		}
	}
	// Both fields are required (gRFC A6): one left out is no default.
	for _, f := range []struct {
		name string
		v    float64
	}{{"maxTokens", b.maxTokens}, {"tokenRatio", b.tokenRatio}} {
		if f.v == 0 {
			p.add(path, false, "%s 0 is not a positive finite number", f.name)
			return
		}
	}
	nb, err := newBudget(b)
	if err != nil {
		p.add(path, false, "%v", err)
		return
	}
	c.budgets = guards[budgetParams, guard.Budget]{ThrottlingBudget: {params: b, g: nb}}
}

func parseMethodConfig(c *Config, path string, v *value, p *problems) {
	fields, err := object(v)
	if err != nil {
		p.add(path, false, "%v", err)
		return
	}
	var (
		names   []string
		e       = &entry{policy: retry.Policy{MaxAttempts: 1}}
		retried bool
	)
	for _, f := range fields {
		fpath := path + "." + f.key
		if isNull(f.val) {
			continue // protojson's EmitUnpopulated writes null: absent, as for grpc-go
		}
		switch f.key {
		case "name":
			names = parseNames(fpath, f.val, p)
		case "timeout":
			d, err := protoDuration(f.val)
			if err != nil {
				p.add(fpath, true, "%v", err)
				continue
			}
			e.policy.MaxElapsed = d
		case "retryPolicy":
			retried = true
			parseRetryPolicy(fpath, f.val, e, p)
		case "hedgingPolicy":
			h, err := parseHedging(f.val, true)
			if err != nil {
				p.add(fpath, true, "%v", err)
				continue
			}
			e.hedging = h
		}
	}
	if retried && e.hedging != nil {
		p.add(path, true, "has both retryPolicy and hedgingPolicy; gRFC A6 allows one")
	}
	for _, n := range names {
		if _, dup := c.policies[n]; dup {
			p.add(path+".name", false, "%q is named by an earlier methodConfig too", n)
			continue
		}
		c.policies[n] = e
	}
}

// parseNames turns a methodConfig's names into policy names.
func parseNames(path string, v *value, p *problems) []string {
	els, err := elements(v)
	if err != nil {
		p.add(path, false, "%v", err)
		return nil
	}
	var names []string
	for i, el := range els {
		npath := fmt.Sprintf("%s[%d]", path, i)
		fields, err := object(el)
		if err != nil {
			p.add(npath, false, "%v", err)
			continue
		}
		var service, method string
		for _, f := range fields {
			var err error
			switch f.key {
			case "service":
				service, err = str(f.val)
			case "method":
				method, err = str(f.val)
			}
			if err != nil {
				p.add(npath+"."+f.key, false, "%v", err)
			}
		}
		switch {
		case service == "" && method != "":
			p.add(npath, false, "method %q has no service", method)
		case service == "":
			names = append(names, DefaultName)
		default:
			names = append(names, "/"+service+"/"+method)
		}
	}
	return names
}

func parseRetryPolicy(path string, v *value, e *entry, p *problems) {
	fields, err := object(v)
	if err != nil {
		p.add(path, true, "%v", err)
		return
	}
	pol := &e.policy
	var seen [5]bool
	fail := func(field string, err error) { p.add(path+"."+field, true, "%v", err) }
	positive := func(field string, v *value, dst *time.Duration) bool {
		d, err := protoDuration(v)
		if err == nil && d <= 0 {
			err = errorf("%v is not positive", d)
		}
		if err != nil {
			fail(field, err)
			return false
		}
		*dst = d
		return true
	}
	for _, f := range fields {
		if isNull(f.val) {
			continue // absent
		}
		switch f.key {
		case "maxAttempts":
			n, err := grpcAttempts(f.val)
			if err == nil && n <= 1 {
				err = errorf("%d must be above 1", n)
			}
			if err != nil {
				fail(f.key, err)
				continue
			}
			pol.MaxAttempts = min(n, maxGRPCAttempts)
			seen[0] = true
		case "initialBackoff":
			seen[1] = positive(f.key, f.val, &pol.BaseBackoff)
		case "maxBackoff":
			seen[2] = positive(f.key, f.val, &pol.MaxBackoff)
		case "backoffMultiplier":
			x, err := number(f.val)
			if err == nil && !(x > 0) {
				err = errorf("%v is not positive", x)
			} else if err == nil && x < 1 {
				err = errorf("%v is below 1: this library's backoffs never shrink", x)
			}
			if err != nil {
				fail(f.key, err)
				continue
			}
			pol.Factor = x
			seen[3] = true
		case "retryableStatusCodes":
			cs, err := grpcCodes(f.val)
			if err == nil && len(cs) == 0 {
				err = errorf("the list is empty")
			}
			if err != nil {
				fail(f.key, err)
				continue
			}
			e.grpc = cs
			seen[4] = true
		}
	}
	for i, name := range [...]string{"maxAttempts", "initialBackoff", "maxBackoff", "backoffMultiplier", "retryableStatusCodes"} {
		if !seen[i] && !p.has(path+"."+name) {
			p.add(path+"."+name, true, "is required")
		}
	}
	if seen[1] && seen[2] && pol.BaseBackoff > pol.MaxBackoff {
		p.add(path+".maxBackoff", true, "%v is below initialBackoff %v", pol.MaxBackoff, pol.BaseBackoff)
	}
	pol.Jitter = retry.FullJitter
	e.jitter = "full"
}
