package outbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
)

// httpPayload is the Payload of an op made by [HTTPOp].
type httpPayload struct {
	Method string      `json:"method"`
	URL    string      `json:"url"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

// secretHeaders are never written to the journal, even when allowed: the
// sender adds credentials at send time.
var secretHeaders = map[string]bool{
	"Authorization":       true,
	"Proxy-Authorization": true,
	"Cookie":              true,
	"Cookie2":             true,
	"X-Api-Key":           true,
}

// HTTPOp turns r into an op of the given kind, to be sent later by an
// [HTTPHandler]: its method, URL, body, and the headers named in allow.
// It reads r's body (at most MaxPayload bytes) and closes it. The op's key
// is r's Idempotency-Key header when it has one, so that a caller's key
// is kept; otherwise Enqueue makes one.
//
// Only allowed headers are kept, and credentials never are: naming
// Authorization, Proxy-Authorization, Cookie or X-API-Key in allow is an
// error, and so is a URL with a user or password in it (user:pass@host,
// which Go sends as Basic auth). Add credentials when the op is sent, with
// HTTPHandler's prepare.
func HTTPOp(r *http.Request, kind string, allow ...string) (Op, error) {
	if r == nil || r.URL == nil {
		return Op{}, fmt.Errorf("%w: HTTPOp of a nil request or URL", ErrInvalidOp)
	}
	if r.URL.User != nil {
		// Go sends a URL's user:password as Basic auth: a credential,
		// which the journal never holds. Nor does the error quote it.
		return Op{}, fmt.Errorf("%w: the URL holds a credential (userinfo@): add it at send time", ErrInvalidOp)
	}
	p := httpPayload{Method: r.Method, URL: r.URL.String()}
	if p.Method == "" {
		p.Method = http.MethodGet
	}
	for _, name := range allow {
		name = textproto.CanonicalMIMEHeaderKey(name)
		if secretHeaders[name] {
			return Op{}, fmt.Errorf("%w: header %s holds a credential: add it at send time", ErrInvalidOp, name)
		}
		if name == "Idempotency-Key" {
			continue // the op's key, sent by HTTPHandler
		}
		if v, ok := r.Header[name]; ok {
			if p.Header == nil {
				p.Header = make(http.Header)
			}
			p.Header[name] = append([]string(nil), v...)
		}
	}
	if r.Body != nil {
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxPayload+1))
		r.Body.Close()
		if err != nil {
			return Op{}, fmt.Errorf("outbox: read request body: %w", err)
		}
		p.Body = body
	}
	b, err := json.Marshal(p)
	if err != nil {
		return Op{}, fmt.Errorf("outbox: encode request: %w", err)
	}
	if len(b) > MaxPayload {
		return Op{}, fmt.Errorf("%w: request of %d bytes encoded, over MaxPayload", ErrInvalidOp, len(b))
	}
	return Op{Key: r.Header.Get("Idempotency-Key"), Kind: kind, Payload: b}, nil
}

// maxStillRunning bounds the wait a 409's Retry-After can ask for.
const maxStillRunning = time.Minute

// HTTPHandler returns a Handler that sends ops made by [HTTPOp] with client
// [an http.Client over a retryhttp.Transport], with the op's key in the
// Idempotency-Key header. Each attempt of the Outbox is one attempt on the
// wire: Run makes its calls inside a retry loop, so a retryhttp.Transport
// below leaves retrying to the Outbox, which keeps the count across
// restarts.
//
// prepare, if not nil, is called on each request before it is sent: the
// place to add credentials, which the journal never holds. An error from
// it fails the attempt as any other.
//
// A 2xx or 3xx answer ends the op. A 409 with Retry-After, which package
// idempotency sends while an earlier attempt under the same key is still
// running, is a wait and does not count as an attempt. Any other status of
// 400 or more fails the attempt with a *retryhttp.StatusError, headers
// included, and the Outbox's policy judges it: without a Classifier of its
// own, the statuses retryhttp.DefaultClassifier retries (408, 429, 502,
// 503, 504) or the kind's retryableStatusCodes from Options.Policies are
// retried after their Retry-After, and the others end the op. A refusal
// by the Transport's own guards (a breaker, a throttle, a hold) is a wait,
// not an attempt: see Options.Guards.
func HTTPHandler(client *http.Client, prepare func(ctx context.Context, r *http.Request) error) Handler {
	if client == nil {
		client = &http.Client{Transport: &retryhttp.Transport{}}
	}
	return func(ctx context.Context, op Op) error {
		var p httpPayload
		if err := json.Unmarshal(op.Payload, &p); err != nil {
			return retry.Permanent(fmt.Errorf("outbox: the op is not an HTTP op: %w", err))
		}
		req, err := http.NewRequestWithContext(ctx, p.Method, p.URL, bytes.NewReader(p.Body))
		if err != nil {
			return retry.Permanent(fmt.Errorf("outbox: HTTP op: %w", err))
		}
		for k, v := range p.Header {
			req.Header[k] = v
		}
		req.Header.Set("Idempotency-Key", op.Key)
		if prepare != nil {
			if err := prepare(ctx, req); err != nil {
				return err
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			// Under the Outbox's loop, a retryhttp.Transport returns a
			// status it would retry as an error.
			var se *retryhttp.StatusError
			if errors.As(err, &se) && se.StatusCode == http.StatusConflict && se.Header.Get("Retry-After") != "" {
				return &stillRunning{after: stillRunningFor(se.Header.Get("Retry-After"))}
			}
			return err
		}
		// Drain a little so that the connection can be reused; bounded.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		switch s := resp.StatusCode; {
		case s < 400:
			return nil
		case s == http.StatusConflict && resp.Header.Get("Retry-After") != "":
			return &stillRunning{after: stillRunningFor(resp.Header.Get("Retry-After"))}
		default:
			return &retryhttp.StatusError{StatusCode: s, Header: resp.Header}
		}
	}
}

// stillRunning is a 409 of package idempotency: an earlier attempt under
// the same key has not finished. Run waits and tries again, uncounted.
type stillRunning struct{ after time.Duration }

func (e *stillRunning) Error() string {
	return "outbox: 409 Conflict: an earlier attempt under this key is still running"
}

// stillRunningFor is the wait a 409's Retry-After asks for, at most
// maxStillRunning; one the parser cannot read counts as 1s.
func stillRunningFor(v string) time.Duration {
	if d, ok := retryhttp.ParseRetryAfter(v, time.Now(), maxStillRunning); ok {
		return d
	}
	return time.Second
}
