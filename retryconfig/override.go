package retryconfig

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// Overrides are single fields of named policies set outside the document,
// by environment variables and by flags, so that an operator can change
// one value without editing the file:
//
//	RETRY_PAYMENTS_MAX_ATTEMPTS=1 ./server -retry payments.maxBackoff=2s
//
// The precedence is flag > environment > file > the Policy's default,
// whatever the order in which Overrides was filled. A field is named as in
// the document (maxAttempts, baseBackoff, factor, maxBackoff, maxElapsed,
// attemptTimeout, jitter, retryableStatusCodes, quota, budget, breaker,
// throttle, staleIfError); its value is written as in the document but without JSON
// quotes: "2s", "band:0.3", "503,429" or "UNAVAILABLE". An override of a
// policy that the document does not define adds it. Overrides set the
// fields of policies only: a budget, breaker or throttle that a policy
// names must be declared by the document, whose fields hold its options.
//
// The zero Overrides has none. *Overrides implements flag.Value, so that
// one repeatable flag sets any field:
//
//	var o retryconfig.Overrides
//	flag.Var(&o, "retry", "override a retry policy's field, as name.field=value")
//
// An Overrides is not safe for concurrent use while it is being filled.
type Overrides struct {
	env, flags []override // applied in this order, each in the order given
}

type override struct {
	source        string // for errors: the variable or the flag's text
	policy, field string
	val           *value // the value, as a document would write it
}

// String implements flag.Value: it lists the flag overrides.
func (o *Overrides) String() string {
	if o == nil {
		return ""
	}
	var b strings.Builder
	for i, ov := range o.flags {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(ov.source)
	}
	return b.String()
}

// Set implements flag.Value: it adds the override "name.field=value", at
// the precedence of a flag. The last name is after the last dot before the
// '=' sign, so that a policy name may hold dots itself ("/pkg.Svc/M.maxAttempts=2").
func (o *Overrides) Set(s string) error {
	target, value, ok := strings.Cut(s, "=")
	dot := strings.LastIndexByte(target, '.')
	if !ok || dot <= 0 {
		// An empty name (".maxAttempts=1", an unset $POLICY) would set a
		// policy nobody can name, and Marshal would write it.
		return fmt.Errorf("retryconfig: %q: want name.field=value, such as payments.maxAttempts=2", s)
	}
	ov, err := newOverride(s, target[:dot], target[dot+1:], value)
	if err != nil {
		return err
	}
	o.flags = append(o.flags, ov)
	return nil
}

// FromEnv adds the overrides of the variables in environ (as os.Environ
// gives them) whose names start with prefix, at the precedence of the
// environment. With prefix "RETRY_", RETRY_PAYMENTS_MAX_ATTEMPTS=1 sets
// maxAttempts of the policy payments: the policy's name is matched in upper
// case, with each character other than a letter or a digit as '_'
// ("payments-eu" is PAYMENTS_EU, the gRPC method "/shop.Orders/Get"
// _SHOP_ORDERS_GET), and the field is in upper snake case; two policies
// that spell alike are an error of Apply. A
// variable with the prefix whose field this package does not know is an
// error, so that a typo is not silently ignored.
func (o *Overrides) FromEnv(prefix string, environ []string) error {
	if prefix == "" {
		return fmt.Errorf("retryconfig: FromEnv needs a prefix, such as \"RETRY_\"")
	}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		policy, field := "", ""
		for _, f := range fieldNames {
			if p, ok := strings.CutSuffix(rest, "_"+envName(f)); ok && p != "" {
				policy, field = p, f
				break
			}
		}
		if field == "" {
			return fmt.Errorf("retryconfig: %s: want %s<POLICY>_<FIELD>, with a field such as MAX_ATTEMPTS", name, prefix)
		}
		ov, err := newOverride(name, policy, field, value)
		if err != nil {
			return err
		}
		ov.policy = policy // an upper snake name, matched in Apply
		ov.source = name
		o.env = append(o.env, ov)
	}
	return nil
}

// fieldNames are the fields an override can set; hedging and chaos cannot,
// being an object and a list of them.
var fieldNames = [...]string{"maxAttempts", "baseBackoff", "factor", "maxBackoff", "maxElapsed",
	"attemptTimeout", "jitter", "retryableStatusCodes", "quota", "budget", "breaker", "throttle", "staleIfError"}

// envName turns a field's name, "maxAttempts", into the variable's
// "MAX_ATTEMPTS".
func envName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

func newOverride(source, policy, field, value string) (override, error) {
	switch field {
	case "hedging":
		return override{}, fmt.Errorf("retryconfig: %s: hedging is an object: set it in the document", source)
	case "chaos":
		return override{}, fmt.Errorf("retryconfig: %s: chaos is a list of faults: set it in the document", source)
	}
	ov := override{source: source, policy: policy, field: field, val: overrideValue(field, value)}
	if err := (&entry{}).set(field, ov.val); err != nil {
		return ov, fmt.Errorf("retryconfig: %s: %w", source, err)
	}
	return ov, nil
}

// overrideValue is the value that an override's text stands for, as a
// document would write it: a list of codes for retryableStatusCodes, a
// number for maxAttempts and factor if the text is one, and otherwise a
// string, so that "5" for maxBackoff is rejected for its missing unit as a
// document's "5" is.
func overrideValue(field, text string) *value {
	switch field {
	case "maxAttempts", "factor":
		return scalar(text)
	case "retryableStatusCodes":
		v := &value{kind: kindArray, raw: []byte("[" + text + "]")}
		for _, c := range strings.Split(text, ",") {
			v.elems = append(v.elems, scalar(strings.TrimSpace(c)))
		}
		return v
	}
	return &value{kind: kindString, text: text, raw: []byte(strconv.Quote(text))}
}

// scalar is text as a JSON number if it is written as one, and otherwise
// as a string.
func scalar(text string) *value {
	if isNumber(text) {
		return &value{kind: kindNumber, text: text, raw: []byte(text)}
	}
	return &value{kind: kindString, text: text, raw: []byte(strconv.Quote(text))}
}

// Apply returns a copy of cfg with the overrides applied, environment
// first, then flags; cfg itself does not change. The result is validated
// as a document is: an override that makes a policy invalid is an error
// that names it.
func (o *Overrides) Apply(cfg *Config) (*Config, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	c := &Config{policies: make(map[string]*entry, len(cfg.policies)), budgets: maps.Clone(cfg.budgets),
		breakers: maps.Clone(cfg.breakers), throttles: maps.Clone(cfg.throttles), service: cfg.service}
	for n, e := range cfg.policies {
		cp := *e
		c.policies[n] = &cp
	}
	var p problems
	touched := map[string]bool{}
	apply := func(ov override, name string) {
		e, ok := c.policies[name]
		if !ok {
			e = &entry{}
			if _, throttled := c.budgets[ThrottlingBudget]; throttled && c.service {
				// A service config's retryThrottling covers every method,
				// one an override adds too: during the incident the
				// override is for, its retries must not escape it.
				e.budget = ThrottlingBudget
			}
			c.policies[name] = e
		}
		if err := e.set(ov.field, ov.val); err != nil {
			p.add(ov.source, true, "%v", err)
		}
		touched[name] = true
	}
	if o != nil {
		for _, ov := range o.env {
			name, err := c.envPolicy(ov.policy)
			if err != nil {
				p.add(ov.source, false, "%v", err)
				continue
			}
			apply(ov, name)
		}
		for _, ov := range o.flags {
			apply(ov, ov.policy)
		}
	}
	for name := range touched {
		e := c.policies[name]
		if c.checkRefs(name, e, &p) {
			checkPolicy(name, &e.policy, &p)
		}
	}
	if err := p.err("invalid overrides"); err != nil {
		return nil, err
	}
	c.bind()
	return c, nil
}

// envPolicy finds the policy whose name an environment variable spells
// (see envPolicyName), or makes its name in lower case. Two policies that
// the variable spells alike are an error: which one it meant is unknown.
func (c *Config) envPolicy(upper string) (string, error) {
	found := ""
	for _, n := range sortedKeys(c.policies) {
		if envPolicyName(n) != upper {
			continue
		}
		if found != "" {
			return "", fmt.Errorf("names the policies %q and %q alike: rename one, or set it by flag", found, n)
		}
		found = n
	}
	if found != "" {
		return found, nil
	}
	return strings.ToLower(upper), nil
}

// envPolicyName is a policy's name as a variable spells it: in upper case,
// with each character other than a letter or a digit as '_'
// ("/shop.Orders/Get" is _SHOP_ORDERS_GET, "payments-eu" PAYMENTS_EU).
func envPolicyName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
