package retryconfig

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// Marshal writes cfg as a document of our format, which Parse reads back
// into the same policies: fields in a fixed order, names sorted, fields at
// their default left out, durations in Go's form ("1.5s"). It writes every
// byte itself, rather than through encoding/json's handling of
// time.Duration, so that its output is the same under every Go release.
// A Config from ParseServiceConfig is written in our format too.
func Marshal(cfg *Config) ([]byte, error) {
	b := []byte("{\n")
	if cfg == nil {
		cfg = &Config{}
	}
	if len(cfg.budgets) > 0 {
		b = append(b, `  "budgets": {`...)
		for i, name := range sortedKeys(cfg.budgets) {
			bu := cfg.budgets[name]
			b = comma(b, i)
			b = append(b, "\n    "...)
			b = appendString(b, name)
			b = append(b, `: {"maxTokens": `...)
			b = appendFloat(b, bu.maxTokens)
			b = append(b, `, "tokenRatio": `...)
			b = appendFloat(b, bu.tokenRatio)
			b = append(b, '}')
		}
		b = append(b, "\n  },\n"...)
	}
	b = append(b, `  "policies": {`...)
	for i, name := range sortedKeys(cfg.policies) {
		b = comma(b, i)
		b = append(b, "\n    "...)
		b = appendString(b, name)
		b = append(b, ": "...)
		b = appendPolicy(b, cfg.policies[name])
	}
	if len(cfg.policies) > 0 {
		b = append(b, "\n  "...)
	}
	b = append(b, "}\n}\n"...)
	return b, nil
}

func appendPolicy(b []byte, e *entry) []byte {
	p := e.policy
	n := 0
	field := func(name string) {
		if n > 0 {
			b = append(b, ", "...)
		}
		n++
		b = appendString(b, name)
		b = append(b, ": "...)
	}
	dur := func(name string, d time.Duration) {
		if d != 0 {
			field(name)
			b = appendString(b, d.String())
		}
	}
	b = append(b, '{')
	if p.MaxAttempts != 0 {
		field("maxAttempts")
		b = strconv.AppendInt(b, int64(p.MaxAttempts), 10)
	}
	dur("baseBackoff", p.BaseBackoff)
	if p.Factor != 0 {
		field("factor")
		b = appendFloat(b, p.Factor)
	}
	dur("maxBackoff", p.MaxBackoff)
	dur("maxElapsed", p.MaxElapsed)
	dur("attemptTimeout", p.AttemptTimeout)
	if e.jitter != "" {
		field("jitter")
		b = appendString(b, canonicalJitter(e.jitter))
	}
	if e.http != nil || e.grpc != nil {
		field("retryableStatusCodes")
		b = appendCodes(b, e.http, e.grpc)
	}
	if e.budget != "" {
		field("budget")
		b = appendString(b, e.budget)
	}
	if h := e.hedging; h != nil {
		field("hedging")
		b = append(b, `{"maxAttempts": `...)
		b = strconv.AppendInt(b, int64(h.MaxAttempts), 10)
		if h.Delay != 0 {
			b = append(b, `, "hedgingDelay": `...)
			b = appendString(b, h.Delay.String())
		}
		if h.NonFatalCodes != nil {
			b = append(b, `, "nonFatalStatusCodes": `...)
			b = appendCodes(b, nil, h.NonFatalCodes)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

func appendCodes(b []byte, http []int, grpc []uint32) []byte {
	b = append(b, '[')
	for i, c := range http {
		b = listSep(b, i)
		b = strconv.AppendInt(b, int64(c), 10)
	}
	for i, c := range grpc {
		b = listSep(b, i+len(http))
		b = appendString(b, grpcNames[c])
	}
	return append(b, ']')
}

func comma(b []byte, i int) []byte {
	if i > 0 {
		b = append(b, ',')
	}
	return b
}

func listSep(b []byte, i int) []byte {
	if i > 0 {
		b = append(b, ", "...)
	}
	return b
}

// appendString writes s as a JSON string; encoding/json's escaping of a
// plain string has not changed between releases.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

func appendFloat(b []byte, f float64) []byte {
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
