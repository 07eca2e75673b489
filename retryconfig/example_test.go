package retryconfig_test

import (
	"fmt"

	"github.com/stormguard/retry/retryconfig"
)

// A document a service can keep next to its code, or in a ConfigMap.
const serviceDoc = `{
  "budgets": {
    "payments": {"maxTokens": 10, "tokenRatio": 0.1}
  },
  "policies": {
    "default":  {"maxAttempts": 4, "baseBackoff": "200ms", "maxBackoff": "5s"},
    "feed":     {"maxAttempts": 6, "jitter": "decorrelated", "maxElapsed": "30s"},
    "payments": {"maxAttempts": 2, "baseBackoff": "0.2s", "attemptTimeout": "2s",
                 "retryableStatusCodes": [503], "budget": "payments"}
  }
}`

func ExampleParse() {
	cfg, err := retryconfig.Parse([]byte(serviceDoc))
	if err != nil {
		fmt.Println(err)
		return
	}
	p := cfg.Policy("payments")
	fmt.Println(p.MaxAttempts, p.BaseBackoff, p.AttemptTimeout, cfg.HTTPStatusCodes("payments"))
	fmt.Println(cfg.Policy("search").MaxAttempts) // no such policy: "default"
	// Output:
	// 2 200ms 2s [503]
	// 4
}

func ExampleParse_error() {
	_, err := retryconfig.Parse([]byte(`{"policies": {"payments": {"maxBackoff": "5"}}}`))
	fmt.Println(err)
	// Output:
	// retryconfig: policies.payments.maxBackoff: "5" has no unit: write one, such as "5s" or "5ms"
}

func ExampleMarshal() {
	cfg, _ := retryconfig.Parse([]byte(`{"policies": {"feed": {"maxElapsed": "90s", "jitter": "band:0.3"}}}`))
	out, _ := retryconfig.Marshal(cfg)
	fmt.Print(string(out))
	// Output:
	// {
	//   "policies": {
	//     "feed": {"maxElapsed": "1m30s", "jitter": "band:0.3"}
	//   }
	// }
}

func ExampleLive() {
	cfg, _ := retryconfig.Parse([]byte(`{"policies": {"payments": {"maxAttempts": 2}}}`))
	live := retryconfig.NewLive(cfg)

	// A reload with a typo is rejected whole; calls keep the last good config.
	err := live.Update([]byte(`{"policies": {"payments": {"maxAttempts": 1, "maxBackof": "1s"}}}`))
	fmt.Println(err)
	fmt.Println(live.Version(), live.Policy("payments").MaxAttempts)

	// A good one is taken by every call that starts after it.
	_ = live.Update([]byte(`{"policies": {"payments": {"maxAttempts": 1}}}`))
	fmt.Println(live.Version(), live.Policy("payments").MaxAttempts)
	// Output:
	// retryconfig: policies.payments.maxBackof: unknown field (want maxAttempts, baseBackoff, factor, maxBackoff, maxElapsed, attemptTimeout, jitter, retryableStatusCodes, quota, budget, breaker, throttle, hedging, staleIfError or chaos)
	// 1 2
	// 2 1
}
