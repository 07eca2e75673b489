// Command panel shows package retrydebug's retry panel live: it runs a
// small flaky HTTP service, clients that call it through a retrying
// retryhttp.Transport and retry.Do, and serves the panel of their calls.
//
//	go run ./examples/panel
//
// It prints the panel's address; open it in a browser. The panel listens on
// loopback only: like net/http/pprof's pages, it belongs on an internal
// listener, never on the one that serves users. It runs until interrupted,
// or for -duration.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/stormguard/retry/retrydebug"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "`address` of the panel's internal listener (port 0: any free port)")
	duration := flag.Duration("duration", 0, "stop after this long (0: run until interrupted)")
	rate := flag.Float64("rate", 20, "calls per second")
	flag.Parse()
	if err := run(*addr, *duration, *rate); err != nil {
		fmt.Fprintln(os.Stderr, "panel:", err)
		os.Exit(1)
	}
}

func run(addr string, duration time.Duration, rate float64) error {
	if rate <= 0 {
		return errors.New("-rate must be positive")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}

	// The flaky service, on a loopback port of its own.
	svcLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	svc := &http.Server{Handler: flakyService(), ReadHeaderTimeout: 5 * time.Second}
	go svc.Serve(svcLn)
	defer svc.Close()

	// The panel, on the internal listener.
	rec := retrydebug.NewRecorder(0, 0)
	mux := http.NewServeMux()
	mux.Handle("/debug/retries", rec)
	panelLn, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	panel := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go panel.Serve(panelLn)
	defer panel.Close()
	fmt.Printf("retry panel: http://%s/debug/retries\n", panelLn.Addr())

	c, err := newClients("http://"+svcLn.Addr().String(), rec)
	if err != nil {
		return err
	}
	c.run(ctx, rate) // until interrupted or -duration
	fmt.Println("stopping")
	return nil
}
