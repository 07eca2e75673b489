// Command checkout shows a payment that survives the death of the process
// making it: the process is killed mid-payment, and the one started after
// it finishes the same payment, under the same key, once.
//
// The checkout process, when the user presses Pay, enqueues the payment in
// an outbox over a file journal: the op and its idempotency key are on
// disk before Enqueue returns. The outbox sends it through retryhttp with
// the key in Idempotency-Key (credentials added at send time, never
// written) to a payment server guarded by the idempotency middleware. The
// example runs the checkout process as a child (itself, re-executed), and
// kills it with SIGKILL while the server is charging the card. It starts
// the checkout process again: the new one opens the journal, finds the
// payment pending and resumes it under the same key. The server, still
// charging, answers 409 (still running), which the outbox waits out; then
// it replays the saved answer. One charge, one key.
//
//	go run ./examples/checkout
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retryhttp"
)

// The child's settings, from the parent.
const (
	envJournal = "CHECKOUT_JOURNAL" // set: run as the checkout process
	envURL     = "CHECKOUT_URL"     // the payment server
	envPay     = "CHECKOUT_PAY"     // "1": the user presses Pay (the first run)
)

func main() {
	if os.Getenv(envJournal) != "" {
		os.Exit(checkoutProcess(os.Stdout))
	}
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := demo(ctx, exe, os.Stdout)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("payment server: %d charge, under %d key, from %d sends\n", s.Charges, s.Keys, s.Sends)
}

// summary is what the payment server saw.
type summary struct {
	Charges int // times the card was charged
	Keys    int // distinct idempotency keys the sends carried
	Sends   int // requests that reached the server
	Kills   int // checkout processes killed mid-payment
}

// paymentServer charges a card once per request that reaches its handler,
// and takes its time doing it: settle is closed when the card network
// answers.
type paymentServer struct {
	mu       sync.Mutex
	charges  int
	sends    int
	keys     map[string]bool
	charging chan struct{} // a charge has started
	sent     chan struct{} // a request arrived
	settle   chan struct{}
}

// count counts every request, outside the middleware.
func (s *paymentServer) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.sends++
		s.keys[r.Header.Get("Idempotency-Key")] = true
		s.mu.Unlock()
		notify(s.sent)
		next.ServeHTTP(w, r)
	})
}

func (s *paymentServer) charge(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer shop-secret" {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	s.charges++
	id := s.charges
	s.mu.Unlock()
	notify(s.charging)
	<-s.settle // the middleware runs the handler to its end, client gone or not
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]string{"charge": fmt.Sprintf("ch_%d", id)})
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// demo runs the payment server and the checkout process (exe, re-executed
// as a child), kills the child mid-payment, starts it again, and returns
// what the server saw once the second child has finished.
func demo(ctx context.Context, exe string, out io.Writer) (summary, error) {
	dir, err := os.MkdirTemp("", "checkout")
	if err != nil {
		return summary{}, err
	}
	defer os.RemoveAll(dir)
	mw, err := idempotency.New(idempotency.Options{})
	if err != nil {
		return summary{}, err
	}
	s := &paymentServer{keys: map[string]bool{}, charging: make(chan struct{}, 1), sent: make(chan struct{}, 1), settle: make(chan struct{})}
	srv := httptest.NewServer(s.count(mw.Handler(http.HandlerFunc(s.charge))))
	defer srv.Close()
	var settleOnce sync.Once
	settle := func() { settleOnce.Do(func() { close(s.settle) }) }
	defer settle() // never leave a charge hanging

	env := append(os.Environ(), envJournal+"="+filepath.Join(dir, "journal"), envURL+"="+srv.URL)
	var sum summary

	// The first checkout process: the user presses Pay.
	first, exited, err := start(exe, append(env, envPay+"=1"), out)
	if err != nil {
		return sum, err
	}
	select {
	case <-s.charging:
	case err := <-exited:
		return sum, fmt.Errorf("the checkout process ended before the payment was sent: %v", err)
	case <-ctx.Done():
		first.Process.Kill()
		<-exited
		return sum, context.Cause(ctx)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		return sum, err
	}
	<-exited
	sum.Kills++
	fmt.Fprintln(out, "demo: killed the checkout process (SIGKILL) while the card was being charged")
	<-s.sent // the first send's mark; the next one is the resumed process's

	// The second: it resumes what the first left.
	second, exited, err := start(exe, env, out)
	if err != nil {
		return sum, err
	}
	select {
	case <-s.sent: // it sent the payment again, while the first charge runs
	case err := <-exited:
		return sum, fmt.Errorf("the restarted checkout process ended before it sent the payment: %v", err)
	case <-ctx.Done():
		second.Process.Kill()
		<-exited
		return sum, context.Cause(ctx)
	}
	settle() // the card network answers the first charge
	select {
	case err := <-exited:
		if err != nil {
			return sum, fmt.Errorf("the restarted checkout process: %w", err)
		}
	case <-ctx.Done():
		second.Process.Kill()
		<-exited
		return sum, context.Cause(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sum.Charges, sum.Keys, sum.Sends = s.charges, len(s.keys), s.sends
	return sum, nil
}

// start runs exe as a checkout process, its output to out.
func start(exe string, env []string, out io.Writer) (*exec.Cmd, <-chan error, error) {
	cmd := exec.Command(exe)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, out, out
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return cmd, exited, nil
}

// checkoutProcess is the checkout service: it opens the journal, resumes
// whatever a previous process left, and, on its first run, takes the
// user's Pay. It returns the process's exit code.
func checkoutProcess(out io.Writer) int {
	if err := runCheckout(out); err != nil {
		fmt.Fprintln(out, "checkout:", err)
		return 1
	}
	return 0
}

func runCheckout(out io.Writer) error {
	ctx := context.Background()
	j, err := outbox.OpenFile(os.Getenv(envJournal))
	if err != nil {
		return err
	}
	defer j.Close()
	o, err := outbox.New(j, outbox.Options{Policy: retry.Policy{MaxAttempts: 5, BaseBackoff: 100 * time.Millisecond}})
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &retryhttp.Transport{}, Timeout: 30 * time.Second}
	o.Handle("charge", outbox.HTTPHandler(client, func(ctx context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer shop-secret") // at send time: never in the journal
		return nil
	}))
	pending, err := j.Load(ctx)
	if err != nil {
		return err
	}
	var keys []string
	for _, e := range pending {
		if e.State == outbox.Pending {
			keys = append(keys, e.Op.Key)
		}
	}
	if len(keys) > 0 {
		fmt.Fprintf(out, "checkout[%d]: resuming %d pending payment, attempt %d, under its saved key\n", os.Getpid(), len(keys), pending[0].Attempts+1)
	}

	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- o.Run(runCtx) }()
	defer func() { stop(); <-ran }()

	if os.Getenv(envPay) == "1" && len(keys) == 0 {
		// The user presses Pay: the payment and its key are durable before
		// the page says "processing".
		req, err := http.NewRequest(http.MethodPost, os.Getenv(envURL)+"/charges", strings.NewReader(`{"order": 42, "amount": "10.00", "currency": "EUR"}`))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		op, err := outbox.HTTPOp(req, "charge", "Content-Type")
		if err != nil {
			return err
		}
		key, err := o.Enqueue(ctx, op)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "checkout[%d]: Pay pressed: payment for order 42 enqueued, durable\n", os.Getpid())
		keys = append(keys, key)
	}
	for _, key := range keys {
		r, err := o.Wait(ctx, key)
		if err != nil { // a failed payment too: err matches outbox.ErrFailed
			return fmt.Errorf("payment (%s): %w", r.Reason, err)
		}
		fmt.Fprintf(out, "checkout[%d]: payment %v after %d attempts\n", os.Getpid(), r.State, r.Attempts)
	}
	if len(keys) == 0 {
		return errors.New("nothing to pay")
	}
	return nil
}
