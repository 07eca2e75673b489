package retryconfig_test

import (
	"flag"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
)

func TestOverridesPrecedence(t *testing.T) {
	t.Parallel()
	file := mustParse(t, `{"budgets": {"b": {}}, "policies": {
		"payments-eu": {"maxAttempts": 4, "maxBackoff": "5s", "attemptTimeout": "1s"},
		"feed": {"maxAttempts": 6}}}`)

	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o retryconfig.Overrides
	fs.Var(&o, "retry", "override a retry policy's field, as name.field=value")
	// Flags first, environment second: the order of filling does not matter.
	require.NoError(t, fs.Parse([]string{"-retry", "payments-eu.maxAttempts=2", "-retry", "feed.retryableStatusCodes=503, 429,UNAVAILABLE"}))
	require.NoError(t, o.FromEnv("RETRY_", []string{
		"HOME=/root",
		"RETRY_PAYMENTS_EU_MAX_ATTEMPTS=3",
		"RETRY_PAYMENTS_EU_MAX_BACKOFF=2s",
		"RETRY_SEARCH_JITTER=band:0.3",
		"RETRY_FEED_BUDGET=b",
	}))
	cfg, err := o.Apply(file)
	require.NoError(t, err)

	p := cfg.Policy("payments-eu")
	assert.Equal(t, 2, p.MaxAttempts, "flag > env > file")
	assert.Equal(t, 2*time.Second, p.MaxBackoff, "env > file")
	assert.Equal(t, time.Second, p.AttemptTimeout, "file > default")
	assert.Equal(t, time.Duration(0), p.BaseBackoff, "default")
	assert.Equal(t, retry.BandJitter(0.3), cfg.Policy("search").Jitter, "an override can add a policy")
	assert.Equal(t, []int{503, 429}, cfg.HTTPStatusCodes("feed"))
	assert.Equal(t, []uint32{14}, cfg.GRPCCodes("feed"))
	assert.NotNil(t, cfg.Policy("feed").Budget)
	assert.Equal(t, 4, file.Policy("payments-eu").MaxAttempts, "Apply does not change its input")
	assert.Equal(t, "payments-eu.maxAttempts=2 feed.retryableStatusCodes=503, 429,UNAVAILABLE", o.String())
}

func TestOverridesErrors(t *testing.T) {
	t.Parallel()
	var o retryconfig.Overrides
	assert.ErrorContains(t, o.Set("payments=2"), `want name.field=value`)
	assert.ErrorContains(t, o.Set("payments.maxBackoff=5"), `payments.maxBackoff=5: "5" has no unit`)
	assert.ErrorContains(t, o.Set("payments.maxAttempts=two"), `"two" is not a number`)
	assert.ErrorContains(t, o.Set("payments.maxAtempts=2"), `unknown field`)
	assert.ErrorContains(t, o.Set("payments.hedging={}"), `set it in the document`)
	assert.ErrorContains(t, o.FromEnv("RETRY_", []string{"RETRY_PAYMENTS_MAX_ATEMPTS=2"}), `RETRY_PAYMENTS_MAX_ATEMPTS: want RETRY_<POLICY>_<FIELD>`)
	assert.ErrorContains(t, o.FromEnv("", []string{"HOME=/root"}), "needs a prefix")
	assert.ErrorContains(t, o.FromEnv("RETRY_", []string{"RETRY_PAYMENTS_JITTER=random"}), `RETRY_PAYMENTS_JITTER: "random" is not a jitter`)

	// Valid alone, invalid over the file: Apply says so, by path.
	require.NoError(t, o.Set("payments.maxBackoff=1s"))
	_, err := o.Apply(mustParse(t, `{"policies": {"payments": {"baseBackoff": "2s"}}}`))
	assert.ErrorContains(t, err, "policies.payments.maxBackoff: 1s is below baseBackoff 2s")
	assert.ErrorIs(t, err, retry.ErrInvalidPolicy)

	var b retryconfig.Overrides
	require.NoError(t, b.Set("payments.budget=nope"))
	_, err = b.Apply(nil)
	assert.ErrorContains(t, err, `policies.payments.budget: "nope" is not a member of budgets`)
}

func TestLiveOverrideSurvivesUpdates(t *testing.T) {
	t.Parallel()
	l := retryconfig.NewLive(mustParse(t, `{"policies": {"payments": {"maxAttempts": 4, "attemptTimeout": "1s"}}}`))
	var o retryconfig.Overrides
	require.NoError(t, o.Set("payments.maxAttempts=1"))
	require.NoError(t, l.Override(&o))
	assert.Equal(t, 1, l.Policy("payments").MaxAttempts)
	assert.Equal(t, uint64(2), l.Version())

	require.NoError(t, l.Update([]byte(`{"policies": {"payments": {"maxAttempts": 5, "attemptTimeout": "3s"}}}`)))
	assert.Equal(t, 1, l.Policy("payments").MaxAttempts, "the flag still wins after a reload")
	assert.Equal(t, 3*time.Second, l.Policy("payments").AttemptTimeout, "the file's other fields apply")

	// A new Override replaces the old one, over the file, not over the old override.
	var o2 retryconfig.Overrides
	require.NoError(t, o2.Set("payments.attemptTimeout=2s"))
	require.NoError(t, o2.Set("payments.maxBackoff=2s"))
	require.NoError(t, l.Override(&o2))
	assert.Equal(t, 5, l.Policy("payments").MaxAttempts)
	assert.Equal(t, 2*time.Second, l.Policy("payments").AttemptTimeout)

	// An update that the override makes invalid is rejected whole.
	err := l.Update([]byte(`{"policies": {"payments": {"baseBackoff": "3s"}}}`))
	assert.ErrorContains(t, err, "policies.payments.maxBackoff: 2s is below baseBackoff 3s")
	var bad retryconfig.Overrides
	require.NoError(t, bad.Set("payments.maxAttempts=-1"))
	require.Error(t, l.Override(&bad))
	assert.Equal(t, 2*time.Second, l.Policy("payments").AttemptTimeout)
	assert.Equal(t, uint64(4), l.Version())
}

func TestDurationText(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var d retryconfig.Duration
	fs.TextVar(&d, "max-backoff", retryconfig.Duration(5*time.Second), "")
	require.NoError(t, fs.Parse([]string{"-max-backoff", "0.2s"}))
	assert.Equal(t, retryconfig.Duration(200*time.Millisecond), d)
	assert.Equal(t, "200ms", d.String())
	text, err := d.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "200ms", string(text))
	assert.ErrorContains(t, fs.Parse([]string{"-max-backoff", "5"}), `"5" has no unit`)
	assert.ErrorContains(t, d.UnmarshalText([]byte("-1s")), "negative")
}

func ExampleOverrides() {
	cfg, _ := retryconfig.Parse([]byte(`{"policies": {"payments": {"maxAttempts": 4, "maxBackoff": "5s"}}}`))

	var o retryconfig.Overrides
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	fs.Var(&o, "retry", "override a retry policy's field, as name.field=value")
	_ = fs.Parse([]string{"-retry", "payments.maxAttempts=2"})
	_ = o.FromEnv("RETRY_", []string{"RETRY_PAYMENTS_MAX_ATTEMPTS=3", "RETRY_PAYMENTS_MAX_BACKOFF=1s"})

	cfg, err := o.Apply(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := cfg.Policy("payments")
	fmt.Println(p.MaxAttempts, p.MaxBackoff) // flag > env > file
	// Output: 2 1s
}

// A variable spells a policy's name in upper case with '_' for every other
// character, as documented, so that a gRPC method's policy is reachable:
// RETRY__SHOP_ORDERS_GET_MAX_ATTEMPTS sets "/shop.Orders/Get". (A '_'
// went before each capital, and the variable matched nothing.) Two names
// that a variable spells alike are an error, not the first in sort order.
func TestEnvNamesOfGRPCMethods(t *testing.T) {
	t.Parallel()
	cfg, err := retryconfig.ParseServiceConfig([]byte(`{"methodConfig": [{"name": [{"service": "shop.Orders", "method": "Get"}],
		"retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`))
	require.NoError(t, err)
	var o retryconfig.Overrides
	require.NoError(t, o.FromEnv("RETRY_", []string{"RETRY__SHOP_ORDERS_GET_MAX_ATTEMPTS=2"}))
	got, err := o.Apply(cfg)
	require.NoError(t, err)
	assert.Equal(t, 2, got.Policy("/shop.Orders/Get").MaxAttempts)
	assert.Equal(t, []string{"/shop.Orders/Get", "default"}, got.Names(), "no unused policy added")

	two, err := retryconfig.Parse([]byte(`{"policies": {"payments-eu": {}, "payments.eu": {}}}`))
	require.NoError(t, err)
	var o2 retryconfig.Overrides
	require.NoError(t, o2.FromEnv("RETRY_", []string{"RETRY_PAYMENTS_EU_MAX_ATTEMPTS=2"}))
	_, err = o2.Apply(two)
	require.Error(t, err)
	assert.ErrorContains(t, err, `"payments-eu" and "payments.eu"`)
}

// An override that adds a policy to a service config keeps it under the
// config's retryThrottling, as every method of the config is: its retries
// do not escape throttling during the incident the override was for.
func TestOverrideAddedToAServiceConfigIsThrottled(t *testing.T) {
	t.Parallel()
	cfg, err := retryconfig.ParseServiceConfig([]byte(`{"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1},
		"methodConfig": [{"name": [{"service": "shop.Orders"}],
		"retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`))
	require.NoError(t, err)
	var o retryconfig.Overrides
	require.NoError(t, o.Set("/shop.Catalog/.maxAttempts=3"))
	got, err := o.Apply(cfg)
	require.NoError(t, err)
	added := got.Policy("/shop.Catalog/")
	assert.Equal(t, 3, added.MaxAttempts)
	require.NotNil(t, added.Budget, "the added method is throttled")
	assert.Same(t, got.Policy("/shop.Orders/").Budget, added.Budget, "by the config's one budget")
}
