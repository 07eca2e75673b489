package retryconfig

import (
	"net/http"
	"strings"

	"github.com/stormguard/retry/chaos"
)

// A policy may declare faults to inject into its calls, for a game day
// (see package chaos): "chaos": [{"rate": 0.2, "status": 503}, …]. The
// document only declares them; a program arms them with a chaos.Switch of
// its own, which stays off until the program turns it on, so that a
// document cannot inject a fault into a service that did not ask for it.

// Bounds of the faults of one policy: a game day needs a few.
const (
	maxFaults       = 16
	maxFaultHeaders = 16
)

const faultFields = "name, rate, status, header, latency or drop"

// parseChaos reads a policy's list of faults.
func parseChaos(v *value) ([]chaos.Fault, error) {
	els, err := elements(v)
	if err != nil {
		return nil, err
	}
	switch {
	case len(els) == 0:
		return nil, errorf("the list is empty: leave the field out for no faults")
	case len(els) > maxFaults:
		return nil, errorf("%d faults: at most %d", len(els), maxFaults)
	}
	fs := make([]chaos.Fault, 0, len(els))
	for i, el := range els {
		f, err := parseFault(el)
		if err != nil {
			return nil, errorf("[%d]: %v", i, err)
		}
		fs = append(fs, f)
	}
	return fs, nil
}

// parseFault reads one fault, and checks it as chaos.Fault.Validate does.
func parseFault(v *value) (chaos.Fault, error) {
	var f chaos.Fault
	fields, err := object(v)
	if err != nil {
		return f, err
	}
	rated := false
	for _, m := range fields {
		var err error
		switch m.key {
		case "name":
			f.Name, err = str(m.val)
		case "rate":
			f.Rate, err = number(m.val)
			rated = true
		case "status":
			f.Status, err = integer(m.val)
		case "header":
			f.Header, err = parseHeader(m.val)
		case "latency":
			f.Latency, err = durationJSON(m.val)
		case "drop":
			f.Drop, err = boolean(m.val)
		default:
			err = errorf("unknown field (want %s)", faultFields)
		}
		if err != nil {
			return f, errorf("%s: %v", m.key, err)
		}
	}
	if !rated {
		return f, errorf("rate: missing: write the share of calls to fail, from 0 to 1")
	}
	if err := f.Validate(); err != nil {
		return f, errorf("%s", strings.TrimPrefix(err.Error(), chaos.ErrInvalidFault.Error()+": "))
	}
	return f, nil
}

// parseHeader reads the headers of a fault's status: an object of names
// and string values, {"Retry-After": "1"}.
func parseHeader(v *value) (http.Header, error) {
	ms, err := object(v)
	if err != nil {
		return nil, err
	}
	if len(ms) > maxFaultHeaders {
		return nil, errorf("%d headers: at most %d", len(ms), maxFaultHeaders)
	}
	h := make(http.Header, len(ms))
	for _, m := range ms {
		s, err := str(m.val)
		if err != nil {
			return nil, errorf("%q: %v", m.key, err)
		}
		if !validHeaderName(m.key) || strings.ContainsAny(s, "\r\n\x00") {
			return nil, errorf("%q: %q is not a header a server can send", m.key, s)
		}
		if _, dup := h[http.CanonicalHeaderKey(m.key)]; dup {
			return nil, errorf("%q appears twice", m.key)
		}
		h.Set(m.key, s) // canonical, as Marshal writes it
	}
	return h, nil
}

// validHeaderName reports whether s is an HTTP field name: a token (RFC
// 9110, section 5.1).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// Chaos returns the faults that the policy Policy(name) declares, armed by
// sw, for [chaos.Transport], [chaos.Handler] or the retrygrpc chaos
// interceptors; nil when it declares none. They fire only while sw is on.
// Each call returns a new slice; the faults' Headers are shared and must
// not be modified. To follow a [Live] Config, use [Live.ChaosTransport]
// or [Live.ChaosHandler].
func (c *Config) Chaos(name string, sw *chaos.Switch) []chaos.Fault {
	e := c.lookup(name)
	if e == nil || e.chaos == nil {
		return nil
	}
	fs := make([]chaos.Fault, len(e.chaos))
	for i, f := range e.chaos {
		f.Switch = sw
		fs[i] = f
	}
	return fs
}

// appendChaos writes a policy's faults, each field at its zero left out.
func appendChaos(b []byte, fs []chaos.Fault) []byte {
	b = append(b, '[')
	for i, f := range fs {
		b = listSep(b, i)
		w := fields{b: append(b, '{')}
		w.string("name", f.Name)
		w.key("rate") // written even at 0, since a fault needs one
		w.b = appendFloat(w.b, f.Rate)
		w.int("status", f.Status)
		if len(f.Header) > 0 {
			w.key("header")
			hw := fields{b: append(w.b, '{')}
			for _, k := range sortedKeys(f.Header) {
				for _, v := range f.Header[k] {
					hw.key(k)
					hw.b = appendString(hw.b, v)
				}
			}
			w.b = append(hw.b, '}')
		}
		w.duration("latency", f.Latency)
		if f.Drop {
			w.key("drop")
			w.b = append(w.b, "true"...)
		}
		b = append(w.b, '}')
	}
	return append(b, ']')
}
