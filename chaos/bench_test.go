package chaos_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stormguard/retry/chaos"
)

// The cost of faults that are off, which every request of a service pays
// when the injectors stay in its build: one atomic load, no allocation.
//
//	go test -run '^$' -bench . -benchmem ./chaos

var benchFaults = func(sw *chaos.Switch) []chaos.Fault {
	return []chaos.Fault{{Switch: sw, Rate: 0.2, Status: 503}, {Switch: sw, Rate: 0.1, Latency: 1}, {Switch: sw, Rate: 0.05, Drop: true}}
}

// fixed answers with one response made once, so that the benchmarks count
// the injector's allocations alone.
type fixed struct{ resp *http.Response }

func (f fixed) RoundTrip(*http.Request) (*http.Response, error) { return f.resp, nil }

var fixedBase http.RoundTripper = fixed{&http.Response{StatusCode: 200, Body: http.NoBody}}

var nop http.Handler = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})

func BenchmarkTransportOff(b *testing.B) {
	rt := chaos.Transport(fixedBase, benchFaults(chaos.NewSwitch(1))...)
	req := httptest.NewRequest(http.MethodGet, "http://x/", nil)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = rt.RoundTrip(req)
	}
}

func BenchmarkTransportNoSwitch(b *testing.B) {
	rt := chaos.Transport(fixedBase, benchFaults(nil)...)
	req := httptest.NewRequest(http.MethodGet, "http://x/", nil)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = rt.RoundTrip(req)
	}
}

// BenchmarkTransportBase is the base alone, to subtract from the others.
func BenchmarkTransportBase(b *testing.B) {
	rt := fixedBase
	req := httptest.NewRequest(http.MethodGet, "http://x/", nil)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = rt.RoundTrip(req)
	}
}

func BenchmarkHandlerOff(b *testing.B) {
	h := chaos.Handler(nop, benchFaults(chaos.NewSwitch(1))...)
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, req)
	}
}

// BenchmarkHandlerBase is the next handler alone.
func BenchmarkHandlerBase(b *testing.B) {
	h := nop
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, req)
	}
}

func BenchmarkInjectorActiveOff(b *testing.B) {
	in := chaos.NewInjector(benchFaults(chaos.NewSwitch(1))...)
	b.ReportAllocs()
	for b.Loop() {
		if in.Active() {
			b.Fatal("active")
		}
	}
}

func BenchmarkDecideOn(b *testing.B) {
	sw := chaos.NewSwitch(1)
	sw.On()
	in := chaos.NewInjector(benchFaults(sw)...)
	b.ReportAllocs()
	for b.Loop() {
		in.Decide(nil)
	}
}
