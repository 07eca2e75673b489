package chaos_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry/chaos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// orders is a handler with a side effect: it counts the orders it made.
type orders struct{ made atomic.Int64 }

func (o *orders) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.made.Add(1)
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, `{"id":1}`)
}

// Drop runs the handler, whose side effects happen, and loses its answer:
// the client, over a real connection, gets an error and no response.
func TestHandlerDropRunsHandler(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{"HTTP/1.1", "HTTP/2"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			o := &orders{}
			srv := httptest.NewUnstartedServer(chaos.Handler(o, chaos.Fault{Switch: on(1), Rate: 1, Drop: true}))
			if proto == "HTTP/2" {
				srv.EnableHTTP2 = true
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			client := srv.Client()
			defer client.CloseIdleConnections()
			resp, err := client.Post(srv.URL+"/orders", "application/json", nil)
			if resp != nil {
				resp.Body.Close()
			}
			require.Error(t, err, "the client got an answer")
			assert.Nil(t, resp)
			assert.Equal(t, int64(1), o.made.Load(), "orders made")
		})
	}
}

// A status is written without calling the handler.
func TestHandlerStatus(t *testing.T) {
	t.Parallel()
	o := &orders{}
	h := chaos.Handler(o, chaos.Fault{Switch: on(1), Rate: 1, Status: 503, Header: http.Header{"Retry-After": {"1"}}})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/orders", nil))
	assert.Equal(t, 503, rec.Code)
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	assert.Equal(t, "text/plain; charset=utf-8", rec.Header().Get("Content-Type"))
	assert.Equal(t, "chaos: injected 503\n", rec.Body.String())
	assert.Zero(t, o.made.Load())
}

// An error closes the connection before the handler runs.
func TestHandlerErr(t *testing.T) {
	t.Parallel()
	o := &orders{}
	srv := httptest.NewServer(chaos.Handler(o, chaos.Fault{Switch: on(1), Rate: 1, Err: errors.New("reset")}))
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()
	resp, err := client.Get(srv.URL)
	if resp != nil {
		resp.Body.Close()
	}
	require.Error(t, err)
	assert.Zero(t, o.made.Load(), "the handler ran")
}

// Latency delays the handler; a client that leaves meanwhile is not
// answered and the handler does not run.
func TestHandlerLatency(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o := &orders{}
		h := chaos.Handler(o, chaos.Fault{Switch: on(1), Rate: 1, Latency: time.Second})
		start := time.Now()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		assert.Equal(t, time.Second, time.Since(start))
		assert.Equal(t, http.StatusCreated, rec.Code)

		req := httptest.NewRequest(http.MethodGet, "/", nil)
		ctx, cancel := context.WithTimeout(req.Context(), 100*time.Millisecond)
		defer cancel()
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx))
		assert.False(t, rec.Flushed)
		assert.Empty(t, rec.Body.String())
		assert.Equal(t, int64(1), o.made.Load(), "orders made: the second client had left before the handler ran")
	})
}

// With its switch off, the Handler calls the next one for every request.
func TestHandlerOff(t *testing.T) {
	t.Parallel()
	o := &orders{}
	sw := chaos.NewSwitch(1)
	h := chaos.Handler(o, chaos.Fault{Switch: sw, Rate: 1, Drop: true}, chaos.Fault{Switch: sw, Rate: 1, Status: 503})
	for range 10 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		assert.Equal(t, http.StatusCreated, rec.Code)
	}
	assert.Equal(t, int64(10), o.made.Load())
	assert.Equal(t, []chaos.FaultStats{{Name: "503"}, {Name: "drop"}}, sw.Stats().Faults)
}

// A Handler whose faults can never fire is next itself.
func TestHandlerUnarmedIsNext(t *testing.T) {
	t.Parallel()
	o := &orders{}
	assert.Same(t, o, chaos.Handler(o, chaos.Fault{Rate: 1, Drop: true}).(*orders))
}
