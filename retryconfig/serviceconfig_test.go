package retryconfig_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
)

// a6 is the service config of gRFC A6's examples, with fields that A21
// says a client must ignore (a load balancer, waitForReady, message sizes,
// and a retryPolicy field from a later gRFC).
const a6 = `{
  "loadBalancingConfig": [{"round_robin": {}}],
  "methodConfig": [
    {
      "name": [{"service": "grpc.testing.TestService", "method": "EmptyCall"}],
      "waitForReady": true,
      "timeout": "10s",
      "maxRequestMessageBytes": 1024,
      "retryPolicy": {
        "maxAttempts": 4,
        "initialBackoff": "0.1s",
        "maxBackoff": "1s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"],
        "perAttemptRecvTimeout": "1s"
      }
    },
    {
      "name": [{"service": "grpc.testing.TestService"}],
      "hedgingPolicy": {
        "maxAttempts": 3,
        "hedgingDelay": "0.5s",
        "nonFatalStatusCodes": ["UNAVAILABLE", "INTERNAL", "ABORTED"]
      }
    },
    {
      "name": [{}],
      "retryPolicy": {"maxAttempts": 9, "initialBackoff": "1s", "maxBackoff": "1s",
                      "backoffMultiplier": 1, "retryableStatusCodes": [14]}
    }
  ],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
}`

func TestParseServiceConfig(t *testing.T) {
	t.Parallel()
	cfg, err := retryconfig.ParseServiceConfig([]byte(a6))
	require.NoError(t, err)
	assert.Equal(t, []string{"/grpc.testing.TestService/", "/grpc.testing.TestService/EmptyCall", "default"}, cfg.Names())

	p, ok := cfg.Lookup("/grpc.testing.TestService/EmptyCall")
	require.True(t, ok)
	assert.Equal(t, 4, p.MaxAttempts)
	assert.Equal(t, 100*time.Millisecond, p.BaseBackoff)
	assert.Equal(t, time.Second, p.MaxBackoff)
	assert.Equal(t, 2.0, p.Factor)
	assert.Equal(t, 10*time.Second, p.MaxElapsed, "the method's timeout")
	assert.Equal(t, retry.Jitter(retry.FullJitter), p.Jitter, "A6's backoff is full jitter")
	assert.Equal(t, []uint32{14, 8}, cfg.GRPCCodes("/grpc.testing.TestService/EmptyCall"))

	h, ok := cfg.Hedging("/grpc.testing.TestService/")
	require.True(t, ok)
	assert.Equal(t, retryconfig.Hedging{MaxAttempts: 3, Delay: 500 * time.Millisecond, NonFatalCodes: []uint32{14, 13, 10}}, h)
	assert.Equal(t, 1, cfg.Policy("/grpc.testing.TestService/").MaxAttempts, "a hedged method does not retry too")
	_, ok = cfg.Hedging("/grpc.testing.TestService/EmptyCall")
	assert.False(t, ok)

	def := cfg.Policy("/other.Service/Call")
	assert.Equal(t, 5, def.MaxAttempts, "maxAttempts is capped at 5")
	assert.Equal(t, []uint32{14}, cfg.GRPCCodes("/other.Service/Call"), "codes as numbers")

	// retryThrottling is one Budget for every method.
	b := cfg.Policy("/grpc.testing.TestService/EmptyCall").Budget
	require.NotNil(t, b)
	assert.Equal(t, 10.0, b.Tokens())
	assert.Same(t, b, cfg.Policy("/grpc.testing.TestService/").Budget)
	assert.Same(t, b, def.Budget)
}

func TestParseServiceConfigNoDefault(t *testing.T) {
	t.Parallel()
	empty, err := retryconfig.ParseServiceConfig([]byte(`{"methodConfig": null, "retryThrottling": null}`))
	require.NoError(t, err, "null members are absent ones")
	assert.Equal(t, retry.Policy{MaxAttempts: 1}, empty.Policy("/a/b"))

	cfg, err := retryconfig.ParseServiceConfig([]byte(`{"methodConfig": [{"name": [{"service": "s"}], "timeout": "1s"}]}`))
	require.NoError(t, err)
	assert.Equal(t, retry.Policy{MaxAttempts: 1}, cfg.Policy("/t/M"), "a method without a config makes one attempt, as in grpc-go")
	assert.Equal(t, retry.Policy{MaxAttempts: 1, MaxElapsed: time.Second}, cfg.Policy("/s/"), "no retryPolicy: one attempt")
	assert.Nil(t, cfg.Policy("/s/").Budget, "no retryThrottling: no budget")
}

func TestParseServiceConfigErrors(t *testing.T) {
	t.Parallel()
	rp := func(fields string) string {
		return `{"methodConfig": [{"name": [{"service": "s"}], "retryPolicy": {` + fields + `}}]}`
	}
	const ok = `"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]`
	tests := []struct {
		name, doc, want string
		policy          bool
	}{
		{"one attempt", rp(`"maxAttempts": 1, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]`),
			`methodConfig[0].retryPolicy.maxAttempts: 1 must be above 1`, true},
		{"missing fields", rp(`"maxAttempts": 3`), `methodConfig[0].retryPolicy.initialBackoff: is required`, true},
		{"missing codes", rp(`"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2`),
			`methodConfig[0].retryPolicy.retryableStatusCodes: is required`, true},
		{"empty codes", rp(`"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": []`),
			`methodConfig[0].retryPolicy.retryableStatusCodes: the list is empty`, true},
		{"bad code", rp(`"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE", "BUSY"]`),
			`methodConfig[0].retryPolicy.retryableStatusCodes: [1]: "BUSY" is not a gRPC code name`, true},
		{"zero backoff", rp(`"maxAttempts": 3, "initialBackoff": "0s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [14]`),
			`methodConfig[0].retryPolicy.initialBackoff: 0s is not positive`, true},
		{"bare backoff", rp(`"maxAttempts": 3, "initialBackoff": 0.1, "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [14]`),
			`methodConfig[0].retryPolicy.initialBackoff: 0.1 is a bare number`, true},
		{"shrinking", rp(`"maxAttempts": 3, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 0.5, "retryableStatusCodes": [14]`),
			`methodConfig[0].retryPolicy.backoffMultiplier: 0.5 is below 1`, true},
		{"max below initial", rp(`"maxAttempts": 3, "initialBackoff": "2s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [14]`),
			`methodConfig[0].retryPolicy.maxBackoff: 1s is below initialBackoff 2s`, true},
		{"both policies", `{"methodConfig": [{"name": [{"service": "s"}], "retryPolicy": {` + ok + `}, "hedgingPolicy": {"maxAttempts": 2}}]}`,
			`methodConfig[0]: has both retryPolicy and hedgingPolicy`, true},
		{"bad hedging", `{"methodConfig": [{"name": [{"service": "s"}], "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "soon"}}]}`,
			`methodConfig[0].hedgingPolicy: hedgingDelay: "soon" is not a proto3 duration`, true},
		{"duplicate name", `{"methodConfig": [{"name": [{"service": "s"}]}, {"name": [{"service": "s"}]}]}`,
			`methodConfig[1].name: "/s/" is named by an earlier methodConfig too`, false},
		{"method without service", `{"methodConfig": [{"name": [{"method": "M"}]}]}`, `methodConfig[0].name[0]: method "M" has no service`, false},
		{"throttling tokens", `{"retryThrottling": {"maxTokens": 1001, "tokenRatio": 0.1}}`, `retryThrottling.maxTokens: 1001 is not in (0, 1000]`, false},
		{"throttling ratio", `{"retryThrottling": {"maxTokens": 10, "tokenRatio": 0}}`, `retryThrottling.tokenRatio: 0 is not positive`, false},
		{"not JSON", `{"methodConfig": [`, `not valid JSON`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := retryconfig.ParseServiceConfig([]byte(tt.doc))
			require.Error(t, err)
			assert.Nil(t, cfg)
			assert.ErrorContains(t, err, tt.want)
			assert.Equal(t, tt.policy, errorsIs(err, retry.ErrInvalidPolicy), "errors.Is(err, ErrInvalidPolicy)")
		})
	}
}

func TestServiceConfigRoundTrip(t *testing.T) {
	t.Parallel()
	cfg, err := retryconfig.ParseServiceConfig([]byte(a6))
	require.NoError(t, err)
	out, err := retryconfig.Marshal(cfg)
	require.NoError(t, err)
	back, err := retryconfig.Parse(out)
	require.NoError(t, err, "%s", out)
	samePolicies(t, cfg, back)
}

func TestLiveServiceConfig(t *testing.T) {
	t.Parallel()
	cfg, err := retryconfig.ParseServiceConfig([]byte(a6))
	require.NoError(t, err)
	l := retryconfig.NewLive(cfg)
	budget := l.Policy("default").Budget
	require.NoError(t, l.Update([]byte(`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2,
		"initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}],
		"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}`)))
	assert.Equal(t, 2, l.Policy("/a/b").MaxAttempts)
	assert.Same(t, budget, l.Policy("/a/b").Budget, "the same retryThrottling keeps its Budget")
	assert.Error(t, l.Update([]byte(`{"policies": {"p": {"maxAttempts": 3}}, "methodConfig": 3}`)), "a Live of a service config reads service configs")
	assert.Equal(t, uint64(2), l.Version())
}

func ExampleParseServiceConfig() {
	cfg, err := retryconfig.ParseServiceConfig([]byte(`{
	  "methodConfig": [{
	    "name": [{"service": "shop.Orders", "method": "Get"}],
	    "retryPolicy": {
	      "maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
	      "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]
	    }
	  }],
	  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	p := cfg.Policy("/shop.Orders/Get")
	fmt.Println(p.MaxAttempts, p.BaseBackoff, p.MaxBackoff, cfg.GRPCCodes("/shop.Orders/Get"), p.Budget.Tokens())
	fmt.Println(cfg.Policy("/shop.Orders/Delete").MaxAttempts)
	// Output:
	// 4 100ms 1s [14] 10
	// 1
}

// A service config means to us what it means to grpc-go: proto3
// Durations only (decimal seconds, at most 9 fractional digits, an "s", up
// to proto3's range, saturating), a null member is absent (protojson's
// EmitUnpopulated), and a maxAttempts above 5 is 5.
func TestServiceConfigReadsAsGRPCGoDoes(t *testing.T) {
	t.Parallel()
	doc := func(timeout, extra string) string {
		return `{"methodConfig": [{"name": [{"service": "s"}], "timeout": ` + timeout + extra + `}]}`
	}
	for _, bad := range []string{`"100ms"`, `"1m30s"`, `"1.0000000001s"`, `"315576000001s"`, `"-1s"`, `"1"`, `"s"`} {
		_, err := retryconfig.ParseServiceConfig([]byte(doc(bad, "")))
		assert.Error(t, err, "timeout %s: grpc-go rejects the config", bad)
	}
	for _, c := range []struct {
		text string
		want time.Duration
	}{
		{`"0.2s"`, 200 * time.Millisecond},
		{`"1.000000001s"`, time.Second + time.Nanosecond},
		{`"30s"`, 30 * time.Second},
		{`"315576000000s"`, time.Duration(math.MaxInt64)}, // proto3's maximum: saturated
	} {
		cfg, err := retryconfig.ParseServiceConfig([]byte(doc(c.text, "")))
		require.NoError(t, err, "timeout %s", c.text)
		assert.Equal(t, c.want, cfg.Policy("/s/").MaxElapsed, "timeout %s", c.text)
	}
	cfg, err := retryconfig.ParseServiceConfig([]byte(`{"methodConfig": [{"name": [{"service": "s"}], "timeout": null, "waitForReady": null,
		"retryPolicy": {"maxAttempts": 3000000000, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2,
		"retryableStatusCodes": ["UNAVAILABLE"], "perAttemptRecvTimeout": null}}]}`))
	require.NoError(t, err, "nulls are absent; a huge maxAttempts is capped")
	p := cfg.Policy("/s/")
	assert.Equal(t, 5, p.MaxAttempts)
	assert.Zero(t, p.MaxElapsed)
	h, err := retryconfig.ParseServiceConfig([]byte(`{"methodConfig": [{"name": [{"service": "s"}],
		"hedgingPolicy": {"maxAttempts": 9, "hedgingDelay": null}}]}`))
	require.NoError(t, err)
	hg, ok := h.Hedging("/s/")
	require.True(t, ok)
	assert.Equal(t, 5, hg.MaxAttempts)
}
