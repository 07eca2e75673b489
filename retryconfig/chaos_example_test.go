package retryconfig_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/stormguard/retry/chaos"
	"github.com/stormguard/retry/retryconfig"
)

// A game day declared in the document and armed by the program: the
// faults fire once the program turns its switch on.
func ExampleLive_ChaosTransport() {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()

	live := retryconfig.NewLive(nil)
	if err := live.Update([]byte(`{"policies": {"orders": {"chaos": [{"rate": 1, "status": 503}]}}}`)); err != nil {
		fmt.Println(err)
		return
	}
	sw := chaos.NewSwitch(1)
	client := &http.Client{Transport: live.ChaosTransport(nil, "orders", sw)}
	defer client.CloseIdleConnections()
	for _, turn := range []func(){sw.Off, sw.On} {
		turn()
		resp, err := client.Get(srv.URL)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println("switch on:", sw.Enabled(), "status:", resp.StatusCode)
	}
	// Output:
	// switch on: false status: 200
	// switch on: true status: 503
}

func ExampleConfig_Chaos() {
	cfg, err := retryconfig.Parse([]byte(`{"policies": {"orders": {"chaos": [{"rate": 0.2, "status": 503}, {"rate": 0.1, "latency": "200ms"}]}}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	sw := chaos.NewSwitch(42)
	for _, f := range cfg.Chaos("orders", sw) {
		fmt.Println(f.Rate, f.Status, f.Latency, f.Switch == sw)
	}
	// Output:
	// 0.2 503 0s true
	// 0.1 0 200ms true
}
