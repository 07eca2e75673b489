package retryconfig

import (
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
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
	b = appendGuards(b, "budgets", cfg.budgets, appendBudget)
	b = appendGuards(b, "breakers", cfg.breakers, appendBreaker)
	b = appendGuards(b, "throttles", cfg.throttles, appendThrottle)
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

// appendGuards writes the member key of a document, the guards gs, one
// line each, sorted by name; nothing if there are none.
func appendGuards[P comparable, G any](b []byte, key string, gs guards[P, G], param func([]byte, P) []byte) []byte {
	if len(gs) == 0 {
		return b
	}
	b = append(b, "  "...)
	b = appendString(b, key)
	b = append(b, ": {"...)
	for i, name := range sortedKeys(gs) {
		b = comma(b, i)
		b = append(b, "\n    "...)
		b = appendString(b, name)
		b = append(b, ": "...)
		b = param(b, gs[name].params)
	}
	return append(b, "\n  },\n"...)
}

func appendPolicy(b []byte, e *entry) []byte {
	p := e.policy
	w := fields{b: append(b, '{')}
	w.int("maxAttempts", p.MaxAttempts)
	w.duration("baseBackoff", p.BaseBackoff)
	w.float("factor", p.Factor)
	w.duration("maxBackoff", p.MaxBackoff)
	w.duration("maxElapsed", p.MaxElapsed)
	w.duration("attemptTimeout", p.AttemptTimeout)
	w.string("jitter", canonicalJitter(e.jitter))
	if e.http != nil || e.grpc != nil {
		w.key("retryableStatusCodes")
		w.b = appendCodes(w.b, e.http, e.grpc)
	}
	w.string("quota", e.quota)
	w.string("budget", e.budget)
	w.string("breaker", e.breaker)
	w.string("throttle", e.throttle)
	if h := e.hedging; h != nil {
		w.key("hedging")
		hw := fields{b: append(w.b, '{')}
		hw.int("maxAttempts", h.MaxAttempts)
		hw.duration("hedgingDelay", h.Delay)
		if h.NonFatalCodes != nil {
			hw.key("nonFatalStatusCodes")
			hw.b = appendCodes(hw.b, nil, h.NonFatalCodes)
		}
		w.b = append(hw.b, '}')
	}
	w.duration("staleIfError", e.staleIfError)
	if e.chaos != nil {
		w.key("chaos")
		w.b = appendChaos(w.b, e.chaos)
	}
	return append(w.b, '}')
}

// fields writes the members of a JSON object on one line, each but the
// first after ", ". A number, duration or string at zero is left out, as
// a document leaves out a field at its default.
type fields struct {
	b []byte
	n int
}

// key writes the name of the next member.
func (f *fields) key(name string) {
	if f.n > 0 {
		f.b = append(f.b, ", "...)
	}
	f.n++
	f.b = appendString(f.b, name)
	f.b = append(f.b, ": "...)
}

func (f *fields) int(name string, n int) {
	if n != 0 {
		f.key(name)
		f.b = strconv.AppendInt(f.b, int64(n), 10)
	}
}

func (f *fields) float(name string, x float64) {
	if x != 0 {
		f.key(name)
		f.b = appendFloat(f.b, x)
	}
}

func (f *fields) duration(name string, d time.Duration) {
	if d != 0 {
		f.key(name)
		f.b = appendString(f.b, d.String())
	}
}

func (f *fields) string(name, s string) {
	if s != "" {
		f.key(name)
		f.b = appendString(f.b, s)
	}
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

// appendString writes s as a JSON string, escaped as encoding/json
// escaped it under Go 1.26 (HTML characters and U+2028/U+2029 as \u
// escapes), written here so that the bytes do not depend on the release:
// Go 1.27 writes the bytes of invalid UTF-8 as U+FFFD itself where 1.26
// wrote \ufffd.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '<', '>', '&':
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				if c < 0x20 {
					b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
				} else {
					b = append(b, c)
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
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
