package bench_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/hashicorp/go-retryablehttp"
	"github.com/stormguard/retry/retryhttp"
)

// Scenario 5: one logical HTTP request per iteration against a loopback
// server that answers 503, 503, 200, so every library makes three attempts
// with its smallest delay (1ns). Besides ns/op, B/op and allocs/op, each row
// reports:
//   - conns/op: TCP connections opened per logical request (a library that
//     drops a 503 without draining it pays a new connection per retry);
//   - bodyread-B/op (PUT only): bytes read out of the caller's body readers,
//     the first Body and the GetBody replays together. A library that
//     replays through GetBody reads 3×64 KiB = 196608; one that buffers the
//     body reads it once (65536) and copies it into memory of its own, which
//     shows in B/op.
//
// The rows: direct is three plain requests with no retry logic, the floor;
// handloop is the reference loop; retryablehttp is go-retryablehttp's own
// Request type with its body given as a ReaderFunc (it then re-reads the
// caller's body per attempt instead of buffering it); retryablehttp-std is
// the same client behind a standard *http.Client (StandardClient), fed a
// standard request with GetBody; failsafe is failsafe-go's RoundTripper.
// stormguard is retryhttp.Transport over the same kind of transport, fed the
// standard request with GetBody.

// httpDo sends one logical request to url and returns the final response.
// src is the body to send, nil for a GET.
type httpDo func(ctx context.Context, url string, src *bodySource) (*http.Response, error)

func BenchmarkHTTPGet(b *testing.B) { benchHTTP(b, http.MethodGet) }

func BenchmarkHTTPPut(b *testing.B) { benchHTTP(b, http.MethodPut) }

func benchHTTP(b *testing.B, method string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// newRequest makes the standard request the std-client rows send.
	newRequest := func(ctx context.Context, url string, src *bodySource) (*http.Request, error) {
		if src == nil {
			return http.NewRequestWithContext(ctx, method, url, nil)
		}
		return src.newPut(ctx, url)
	}

	rows := []struct {
		name string
		make func(tb testing.TB) httpDo
	}{
		{"direct", func(tb testing.TB) httpDo {
			c := &http.Client{Transport: newTransport(tb)}
			return func(ctx context.Context, url string, src *bodySource) (*http.Response, error) {
				for i := 0; ; i++ {
					req, err := newRequest(ctx, url, src)
					if err != nil {
						return nil, err
					}
					resp, err := c.Do(req)
					if err != nil || i == 2 {
						return resp, err
					}
					drain(resp)
				}
			}
		}},
		{"handloop", func(tb testing.TB) httpDo {
			c := &http.Client{Transport: newTransport(tb)}
			return func(ctx context.Context, url string, src *bodySource) (*http.Response, error) {
				req, err := newRequest(ctx, url, src)
				if err != nil {
					return nil, err
				}
				return handloopHTTP(c, req, tinyDelay, tinyDelay)
			}
		}},
		{"stormguard", func(tb testing.TB) httpDo {
			c := &http.Client{Transport: &retryhttp.Transport{Base: newTransport(tb), Policy: ourPolicy(tinyDelay, tinyDelay)}}
			return func(ctx context.Context, url string, src *bodySource) (*http.Response, error) {
				req, err := newRequest(ctx, url, src)
				if err != nil {
					return nil, err
				}
				return c.Do(req)
			}
		}},
		{"retryablehttp", func(tb testing.TB) httpDo {
			rc := newRetryableClient(tb)
			return func(ctx context.Context, url string, src *bodySource) (*http.Response, error) {
				var body any
				if src != nil {
					body = retryablehttp.ReaderFunc(func() (io.Reader, error) { return src.reader(), nil })
				}
				req, err := retryablehttp.NewRequestWithContext(ctx, method, url, body)
				if err != nil {
					return nil, err
				}
				return rc.Do(req)
			}
		}},
		{"retryablehttp-std", func(tb testing.TB) httpDo {
			c := newRetryableClient(tb).StandardClient()
			return func(ctx context.Context, url string, src *bodySource) (*http.Response, error) {
				req, err := newRequest(ctx, url, src)
				if err != nil {
					return nil, err
				}
				return c.Do(req)
			}
		}},
		{"failsafe", func(tb testing.TB) httpDo {
			c := &http.Client{Transport: failsafehttp.NewRoundTripperWithExecutor(newTransport(tb), failsafeHTTPExecutor())}
			return func(ctx context.Context, url string, src *bodySource) (*http.Response, error) {
				req, err := newRequest(ctx, url, src)
				if err != nil {
					return nil, err
				}
				return c.Do(req)
			}
		}},
	}

	for _, row := range rows {
		b.Run(row.name, func(b *testing.B) {
			srv := newFlakyServer(b, 3)
			do := row.make(b)
			var src *bodySource
			if method == http.MethodPut {
				src = &bodySource{}
			}
			n := 0
			for b.Loop() {
				n++
				resp, err := do(ctx, srv.URL, src)
				if err != nil {
					b.Fatal(err)
				}
				drain(resp)
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d, want 200", resp.StatusCode)
				}
			}
			if err := srv.check(n, src != nil); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(srv.conns.Load())/float64(n), "conns/op")
			if src != nil {
				b.ReportMetric(float64(src.read.Load())/float64(n), "bodyread-B/op")
			}
		})
	}
}

// check reports whether the server saw three requests per logical request,
// each with the full body when there is one.
func (s *flakyServer) check(n int, withBody bool) error {
	if got, want := s.requests.Load(), int64(3*n); got != want {
		return fmt.Errorf("server answered %d requests, want %d", got, want)
	}
	want := int64(0)
	if withBody {
		want = int64(3 * n * bodySize)
	}
	if got := s.bodyBytes.Load(); got != want {
		return fmt.Errorf("server received %d body bytes, want %d", got, want)
	}
	return nil
}

// newRetryableClient configures go-retryablehttp: 3 retries, 1ns waits, its
// DefaultBackoff (exponential, but without jitter: its jittered backoff,
// LinearJitterBackoff, is linear), no logger (its default logs every retry to
// stderr), over a transport of its own.
func newRetryableClient(tb testing.TB) *retryablehttp.Client {
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{Transport: newTransport(tb)}
	rc.Logger = nil
	rc.RetryMax = attempts - 1
	rc.RetryWaitMin = tinyDelay
	rc.RetryWaitMax = tinyDelay
	return rc
}

// failsafeHTTPExecutor configures failsafe-go for HTTP as failsafePolicy.
// failsafehttp neither drains nor closes a response it retries past, which
// pins that response's connection until the caller closes the body it never
// sees; an OnRetryScheduled listener drains and closes it, as a careful user
// must.
func failsafeHTTPExecutor() failsafe.Executor[*http.Response] {
	b := failsafehttp.NewRetryPolicyBuilder().
		OnRetryScheduled(func(e failsafe.ExecutionScheduledEvent[*http.Response]) {
			if resp := e.LastResult(); resp != nil {
				drain(resp)
			}
		})
	return failsafe.With(failsafePolicy(b, tinyDelay, tinyDelay))
}

// BenchmarkHTTPFirstSuccess is the HTTP case that matters most: a GET
// that the server answers 200 at once, so that nothing is retried and the
// rows differ only by what wrapping the request costs. direct is one plain
// request, the floor; handloop and stormguard are as in BenchmarkHTTPGet.
func BenchmarkHTTPFirstSuccess(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rows := []struct {
		name string
		make func(tb testing.TB) func(req *http.Request) (*http.Response, error)
	}{
		{"direct", func(tb testing.TB) func(req *http.Request) (*http.Response, error) {
			return (&http.Client{Transport: newTransport(tb)}).Do
		}},
		{"handloop", func(tb testing.TB) func(req *http.Request) (*http.Response, error) {
			c := &http.Client{Transport: newTransport(tb)}
			return func(req *http.Request) (*http.Response, error) { return handloopHTTP(c, req, tinyDelay, tinyDelay) }
		}},
		{"stormguard", func(tb testing.TB) func(req *http.Request) (*http.Response, error) {
			return (&http.Client{Transport: &retryhttp.Transport{Base: newTransport(tb), Policy: ourPolicy(tinyDelay, tinyDelay)}}).Do
		}},
	}
	for _, row := range rows {
		b.Run(row.name, func(b *testing.B) {
			srv := newFlakyServer(b, 1) // every request gets its 200
			do := row.make(b)
			for b.Loop() {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				if err != nil {
					b.Fatal(err)
				}
				resp, err := do(req)
				if err != nil {
					b.Fatal(err)
				}
				drain(resp)
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d, want 200", resp.StatusCode)
				}
			}
		})
	}
}
