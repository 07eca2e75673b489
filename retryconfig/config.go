package retryconfig

import (
	"slices"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/chaos"
	"github.com/stormguard/retry/guard"
)

// DefaultName is the name of the policy that stands for every name a
// document does not define.
const DefaultName = "default"

// Config is a parsed, validated document: a set of named policies and the
// budgets, breakers and throttles they share. It never changes once made,
// so that it can be shared between goroutines freely; [Live] swaps one
// Config for another.
//
// The zero Config, like a nil *Config, has no policies: its Policy is the
// zero retry.Policy.
type Config struct {
	policies  map[string]*entry
	def       *entry // policies["default"], looked up once
	budgets   guards[budgetParams, guard.Budget]
	breakers  guards[breakerParams, guard.Breaker]
	throttles guards[throttleParams, guard.Throttle]
	service   bool // made by ParseServiceConfig: Live.Update parses the same way
}

// entry is one named policy, with what the document said about it, so that
// Marshal can write it back as it was written.
type entry struct {
	policy   retry.Policy // Budget, Breaker and Throttle set from their names by bind
	jitter   string       // as written, "" when not set
	budget   string       // the names of its guards, "" for none
	breaker  string
	throttle string
	http     []int
	grpc     []uint32
	hedging  *Hedging
	quota    string // retryhttp's QuotaMode by name, "" when not set

	staleIfError time.Duration // 0 when not set
	chaos        []chaos.Fault // without a Switch: see Config.Chaos
}

// Hedging is a gRPC hedgingPolicy (gRFC A6): up to MaxAttempts copies of a
// call, the next one sent after Delay unless an earlier one has answered, the
// first one to answer with an OK or a fatal status wins and the others are
// cancelled. A status in NonFatalCodes lets the other copies go on.
//
// retryconfig parses and validates it; sending the copies is the work of
// the gRPC integration that reads it with [Config.Hedging].
type Hedging struct {
	MaxAttempts   int           // 2 to 5
	Delay         time.Duration // between copies; 0 sends them all at once
	NonFatalCodes []uint32      // gRPC codes, as numbers (codes.Code(c))
}

// Policy returns the policy named name, else the one named "default", else
// the zero retry.Policy. It costs a map lookup and does not allocate.
//
// The Policy has no Classifier: retryableStatusCodes are read by the
// integration that calls with it (see [Config.HTTPStatusCodes]).
func (c *Config) Policy(name string) retry.Policy {
	if e := c.lookup(name); e != nil {
		return e.policy
	}
	return retry.Policy{}
}

// Lookup returns the policy named exactly name, with no fallback to
// "default", and whether the document defines it. The gRPC integration uses
// it to try "/service/method", then "/service/", then "default".
func (c *Config) Lookup(name string) (retry.Policy, bool) {
	if c == nil {
		return retry.Policy{}, false
	}
	e, ok := c.policies[name]
	if !ok {
		return retry.Policy{}, false
	}
	return e.policy, true
}

// HTTPStatusCodes returns the HTTP statuses that the policy Policy(name)
// retries, or nil when its document did not list any, which means the
// integration's default list. The caller must not modify the slice.
func (c *Config) HTTPStatusCodes(name string) []int {
	if e := c.lookup(name); e != nil {
		return e.http
	}
	return nil
}

// HTTPQuota returns the name of the quota mode of the policy
// Policy(name), one of [QuotaModes] ("hold", "spread" or "off"), or ""
// when its document does not set one, which means the Transport's own
// (see retryhttp.QuotaMode).
func (c *Config) HTTPQuota(name string) string {
	if e := c.lookup(name); e != nil {
		return e.quota
	}
	return ""
}

// QuotaModes returns the names a policy's "quota" may take, in the order
// of retryhttp.QuotaMode's values: "hold" (the default), "spread", "off".
func QuotaModes() []string { return []string{"hold", "spread", "off"} }

// GRPCCodes returns the gRPC status codes, as numbers (codes.Code(c)), that
// the policy Policy(name) retries, or nil when its document did not list
// any, which means the integration's default list. The caller must not
// modify the slice.
func (c *Config) GRPCCodes(name string) []uint32 {
	if e := c.lookup(name); e != nil {
		return e.grpc
	}
	return nil
}

// Hedging returns the hedging of the policy Policy(name), and whether it
// has one. The caller must not modify NonFatalCodes.
func (c *Config) Hedging(name string) (Hedging, bool) {
	if e := c.lookup(name); e != nil && e.hedging != nil {
		return *e.hedging, true
	}
	return Hedging{}, false
}

// Names returns the names of the policies, sorted.
func (c *Config) Names() []string {
	if c == nil {
		return nil
	}
	names := make([]string, 0, len(c.policies))
	for n := range c.policies {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (c *Config) lookup(name string) *entry {
	if c == nil {
		return nil
	}
	if e, ok := c.policies[name]; ok {
		return e
	}
	return c.def
}

// bind gives each policy the guards it names. Parse calls it once, and
// Live again after it has carried guards over from the previous Config.
func (c *Config) bind() {
	for _, e := range c.policies {
		e.policy.Budget = c.budgets.get(e.budget)
		e.policy.Breaker = c.breakers.get(e.breaker)
		e.policy.Throttle = c.throttles.get(e.throttle)
	}
	c.def = c.policies[DefaultName]
}
