// Command reload serves with retry policies from a file that it reloads,
// without a restart, on SIGHUP and when the file changes.
//
// It logs each accepted version and each rejection (the last good config
// stays in force), shows the active config on /debug/retries, and publishes
// its version as the expvar retryconfig_version on /debug/vars, for a
// dashboard or an OpenTelemetry collector that scrapes it. (A service that
// uses package retryotel, a module of its own, reports the version as the
// gauge retry.config.version with Observer.ObserveConfigVersion, and one
// that mounts the retry panel shows it there with
// retrydebug.Recorder.ConfigVersion.) Flags and
// environment variables override single fields, with the precedence flag >
// environment > file > default:
//
//	RETRY_PAYMENTS_MAX_ATTEMPTS=1 go run ./examples/reload -config policies.json -retry feed.jitter=none
//	kill -HUP <pid>   # or edit policies.json: it is polled every 2s
package main

import (
	"context"
	"encoding/json"
	"expvar"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/stormguard/retry/retryconfig"
)

func main() {
	path := flag.String("config", "policies.json", "the retry policies, as JSON")
	addr := flag.String("addr", "localhost:8080", "where to serve /debug/retries and /debug/vars")
	poll := flag.Duration("poll", 2*time.Second, "how often to look for a change of the file")
	var o retryconfig.Overrides
	flag.Var(&o, "retry", "override a retry policy's field, as name.field=value (repeatable)")
	flag.Parse()
	if err := o.FromEnv("RETRY_", os.Environ()); err != nil {
		log.Fatal(err)
	}

	r, err := newReloader(*path, &o, log.Default())
	if err != nil {
		log.Fatal(err)
	}
	expvar.Publish("retryconfig_version", expvar.Func(func() any { return r.live.Version() }))
	http.Handle("/debug/retries", r)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go r.run(ctx, retryconfig.WatchOptions{Interval: *poll, Reload: hup})

	srv := &http.Server{Addr: *addr, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	log.Printf("serving http://%s/debug/retries", *addr)
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

// reloader keeps a Live config in step with a file.
type reloader struct {
	path string
	live *retryconfig.Live
	log  *log.Logger
}

func newReloader(path string, o *retryconfig.Overrides, logger *log.Logger) (*reloader, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := retryconfig.Parse(data)
	if err != nil {
		return nil, err
	}
	r := &reloader{path: path, live: retryconfig.NewLive(cfg), log: logger}
	if err := r.live.Override(o); err != nil {
		return nil, err
	}
	r.log.Printf("retry config version %d from %s", r.live.Version(), path)
	return r, nil
}

// run follows the file until ctx ends: Live.Watch polls it, reads it on a
// SIGHUP, and keeps the last good version when a document is bad; the log
// says each version and each problem once.
func (r *reloader) run(ctx context.Context, o retryconfig.WatchOptions) {
	cancel := r.live.Subscribe(func(v uint64, _ *retryconfig.Config) {
		r.log.Printf("retry config version %d from %s", v, r.path)
	})
	defer cancel()
	o.OnError = func(err error) { r.log.Printf("%v", err) }
	_ = r.live.Watch(ctx, r.path, o)
}

func (r *reloader) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	doc, err := retryconfig.Marshal(r.live.Config())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		Version uint64          `json:"version"`
		Config  json.RawMessage `json:"config"`
	}{r.live.Version(), doc})
}
