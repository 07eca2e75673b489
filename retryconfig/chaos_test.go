package retryconfig_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/chaos"
	"github.com/stormguard/retry/retryconfig"
)

const chaosDoc = `{"policies": {
  "default": {"chaos": [{"rate": 1, "status": 500}]},
  "orders": {"maxAttempts": 3, "chaos": [
    {"rate": 0.2, "status": 503, "header": {"retry-after": "1"}},
    {"name": "slow", "rate": 0.1, "latency": "200ms"},
    {"rate": 0.05, "drop": true}
  ]},
  "quiet": {}
}}`

// A policy's faults are returned armed by the program's switch, with the
// fallback to "default" of every other accessor.
func TestConfigChaos(t *testing.T) {
	t.Parallel()
	cfg, err := retryconfig.Parse([]byte(chaosDoc))
	require.NoError(t, err)
	sw := chaos.NewSwitch(1)
	assert.Equal(t, []chaos.Fault{
		{Switch: sw, Rate: 0.2, Status: 503, Header: http.Header{"Retry-After": {"1"}}},
		{Switch: sw, Name: "slow", Rate: 0.1, Latency: 200 * time.Millisecond},
		{Switch: sw, Rate: 0.05, Drop: true},
	}, cfg.Chaos("orders", sw))
	assert.Equal(t, []chaos.Fault{{Switch: sw, Rate: 1, Status: 500}}, cfg.Chaos("unknown", sw), "the default's")
	assert.Nil(t, cfg.Chaos("quiet", sw))
	var none *retryconfig.Config
	assert.Nil(t, none.Chaos("orders", sw))

	// Each call gives a slice of its own: arming one leaves the next alone.
	fs := cfg.Chaos("orders", sw)
	fs[0].Rate = 1
	assert.Equal(t, 0.2, cfg.Chaos("orders", nil)[0].Rate)
	assert.Nil(t, cfg.Chaos("orders", nil)[0].Switch)
}

func TestParseChaosErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, chaos, want string }{
		{"not a list", `{"rate": 1}`, `policies.p.chaos: {"rate": 1} is not an array`},
		{"empty", `[]`, `policies.p.chaos: the list is empty: leave the field out for no faults`},
		{"no rate", `[{"status": 503}]`, `policies.p.chaos: [0]: rate: missing`},
		{"rate above 1", `[{"rate": 2, "status": 503}]`, `policies.p.chaos: [0]: Rate 2 is not in [0, 1]`},
		{"bad status", `[{"rate": 1, "status": 99}]`, `[0]: Status 99 is not from 200 to 599`},
		{"status and drop", `[{"rate": 1, "status": 503, "drop": true}]`, `[0]: Status, Err and Drop exclude each other`},
		{"does nothing", `[{"rate": 1}]`, `[0]: the fault does nothing`},
		{"bare latency", `[{"rate": 1, "latency": 200}]`, `[0]: latency: 200 is a bare number`},
		{"unknown field", `[{"rate": 1, "status": 503, "code": 14}]`, `[0]: code: unknown field (want name, rate, status, header, latency or drop)`},
		{"header not text", `[{"rate": 1, "status": 503, "header": {"Retry-After": 1}}]`, `[0]: header: "Retry-After": 1 is not a string`},
		{"header name", `[{"rate": 1, "status": 503, "header": {"a b": "x"}}]`, `is not a header a server can send`},
		{"header value", `[{"rate": 1, "status": 503, "header": {"X": "a\r\nb"}}]`, `is not a header a server can send`},
		{"header twice", `[{"rate": 1, "status": 503, "header": {"x-a": "1", "X-A": "2"}}]`, `"X-A" appears twice`},
		{"header without status", `[{"rate": 1, "drop": true, "header": {"X": "1"}}]`, `a Header needs a Status`},
		{"too many", "[" + strings.Repeat(`{"rate": 1, "drop": true},`, 16) + `{"rate": 1, "drop": true}]`, `17 faults: at most 16`},
		{"second fault", `[{"rate": 1, "drop": true}, {"rate": -1, "drop": true}]`, `[1]: Rate -1 is not in [0, 1]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := retryconfig.Parse([]byte(`{"policies": {"p": {"chaos": ` + tc.chaos + `}}}`))
			require.Error(t, err)
			assert.ErrorIs(t, err, chaos.ErrInvalidFault)
			assert.ErrorIs(t, err, retry.ErrInvalidPolicy)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// A fault cannot come from an environment variable or a flag: it is a
// list of objects, set in the document.
func TestOverrideChaosRefused(t *testing.T) {
	t.Parallel()
	var o retryconfig.Overrides
	err := o.Set(`orders.chaos=[{"rate": 1, "status": 503}]`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "chaos is a list of faults: set it in the document")
}

// A Live's chaos Transport follows the reloads: the faults of the current
// document, only while the program's switch is on.
func TestLiveChaosTransport(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	live := retryconfig.NewLive(nil)
	sw := chaos.NewSwitch(1)
	client := &http.Client{Transport: live.ChaosTransport(nil, "orders", sw)}
	defer client.CloseIdleConnections()
	status := func() int {
		t.Helper()
		resp, err := client.Get(srv.URL)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	update := func(doc string) {
		t.Helper()
		require.NoError(t, live.Update([]byte(doc)))
	}

	update(`{"policies": {"orders": {"chaos": [{"rate": 1, "status": 503}]}}}`)
	assert.Equal(t, 200, status(), "the switch is off")
	sw.On()
	assert.Equal(t, 503, status(), "on")
	update(`{"policies": {"orders": {"chaos": [{"rate": 1, "status": 429}]}}}`)
	assert.Equal(t, 429, status(), "after a reload")
	update(`{"policies": {"orders": {}}}`)
	assert.Equal(t, 200, status(), "after a reload that removed the faults")
	update(`{"policies": {"orders": {"chaos": [{"rate": 1, "status": 503}]}}}`)
	sw.Off()
	assert.Equal(t, 200, status(), "off again")
	assert.Equal(t, []chaos.FaultStats{{Name: "429", Requests: 1, Injected: 1}, {Name: "503", Requests: 1, Injected: 1}}, sw.Stats().Faults)
}

func TestLiveChaosHandler(t *testing.T) {
	t.Parallel()
	cfg, err := retryconfig.Parse([]byte(chaosDoc))
	require.NoError(t, err)
	live := retryconfig.NewLive(cfg)
	sw := chaos.NewSwitch(1)
	h := live.ChaosHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), "checkout", sw)
	serve := func() int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		return rec.Code
	}
	assert.Equal(t, 200, serve())
	sw.On()
	assert.Equal(t, 500, serve(), "the default policy's fault")
}
