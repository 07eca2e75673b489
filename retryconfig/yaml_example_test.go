package retryconfig_test

import (
	"encoding/json"
	"fmt"

	"github.com/stormguard/retry/retryconfig"
	"go.yaml.in/yaml/v3"
)

// A configuration written in YAML goes through Parse as JSON: decode it
// with any YAML library into plain values, encode those as JSON, and Parse
// validates the whole document as it does a JSON file. The field names are
// the same; write durations as strings ("200ms"), as in JSON.
func Example_yaml() {
	doc := []byte(`
policies:
  default:
    maxAttempts: 4
    baseBackoff: 200ms
    jitter: full
  payments:
    maxAttempts: 2
    maxElapsed: 3s
    jitter: "band:0.3"
`)
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		fmt.Println(err)
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg, err := retryconfig.Parse(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := cfg.Policy("payments")
	fmt.Println(p.MaxAttempts, p.MaxElapsed, cfg.Policy("search").BaseBackoff)
	// Output: 2 3s 200ms
}
