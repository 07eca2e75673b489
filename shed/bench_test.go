package shed_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stormguard/retry/shed"
)

// The cost of the Limiter, side by side with a bare handler: an admitted
// request through Handler against the same handler alone, and a shed one
// (full limit, no queue) that never reaches it. The handler does nothing,
// so that the difference is the Limiter's. The ResponseWriter is reused:
// its allocations are the server's, not the Limiter's.
//
//	go test -run '^$' -bench . -benchmem ./shed

// nopWriter is a ResponseWriter that keeps nothing.
type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nopWriter) WriteHeader(int)             {}

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })

func benchServe(b *testing.B, h http.Handler) {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	w := &nopWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h.ServeHTTP(w, req)
	}
}

func BenchmarkBareHandler(b *testing.B) { benchServe(b, ok) }

func BenchmarkHandlerAdmitted(b *testing.B) {
	l, err := shed.New(shed.Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchServe(b, l.Handler(ok))
}

// BenchmarkHandlerAdmittedParallel is the admitted request with every
// core serving: the lock-free path under contention.
func BenchmarkHandlerAdmittedParallel(b *testing.B) {
	l, err := shed.New(shed.Options{MaxLimit: 1 << 20, InitialLimit: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	h := l.Handler(ok)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		w := &nopWriter{h: http.Header{}}
		for pb.Next() {
			h.ServeHTTP(w, req)
		}
	})
}

func BenchmarkHandlerShed(b *testing.B) {
	l, err := shed.New(shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: -1})
	if err != nil {
		b.Fatal(err)
	}
	release, err := l.Acquire(context.Background(), shed.Critical) // the one slot, held
	if err != nil {
		b.Fatal(err)
	}
	defer release(shed.Success)
	benchServe(b, l.Handler(ok))
}

// BenchmarkAcquireRelease is the Limiter alone, for servers that call
// Acquire themselves.
func BenchmarkAcquireRelease(b *testing.B) {
	l, err := shed.New(shed.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		release, err := l.Acquire(ctx, shed.Critical)
		if err != nil {
			b.Fatal(err)
		}
		release(shed.Success)
	}
}

var sinkTime time.Time

// BenchmarkTimeNow is a read of the real clock, which an admitted request
// makes twice (its start, its end) and a shed one twice (its Retry-After
// reads the time too): on machines where the clock is slow to read (a
// virtual machine without a fast clock source, a sandbox), it is most of
// the Limiter's cost.
func BenchmarkTimeNow(b *testing.B) {
	for b.Loop() {
		sinkTime = time.Now()
	}
}
