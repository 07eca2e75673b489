package outbox

import (
	"context"
	"errors"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
)

// maxRetryAfter bounds the Retry-After of an HTTP answer that the Outbox
// waits for before an op's next attempt, as a retryhttp.Transport's
// default MaxRetryAfter does: a hostile server cannot park an op longer.
const maxRetryAfter = time.Minute

// policyFor is the policy of an attempt of an op of kind: Policies' for
// the kind, read now, or Options.Policy; with the Outbox's guards.
func (o *Outbox) policyFor(kind string) retry.Policy {
	p := o.policy
	if o.policies != nil {
		p = retryhttp.NamedPolicy(o.policies.Config(), kind)
		if byCodes := p.Classifier; byCodes != nil {
			// The kind's retryableStatusCodes judge its HTTP answers.
			p.Classifier = httpAware(byCodes)
		}
		p = o.fill(p)
	}
	return p.WithGuards(&o.guards, kind)
}

// fill makes p a policy for Run's steps: on the Outbox's clock, without
// the hooks it does not call, a loop with no count limit bounded by the horizon (NotAfter ends
// it), the defaults filled, and the HTTP-aware Classifier unless p has one.
func (o *Outbox) fill(p retry.Policy) retry.Policy {
	p.Clock, p.OnRetry, p.OnDone = o.clock, nil, nil
	if p.MaxAttempts < 0 && p.MaxElapsed == 0 {
		p.MaxElapsed = o.horizon
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = defaultMaxAttempts
	}
	if p.Classifier == nil {
		p.Classifier = classify
	}
	return p
}

// classify is the Classifier of a Policy without one: an HTTP answer (a
// *retryhttp.StatusError, from HTTPHandler or a retryhttp.Transport below
// any handler) is judged as the Transport judges it, with its Retry-After;
// any other error as retry.DefaultClassifier judges it. A Policy from
// Policies that lists retryableStatusCodes judges its statuses by them
// (httpAware of retryhttp.NamedPolicy's Classifier).
var classify = httpAware(retryhttp.DefaultClassifier)

// httpAware judges an HTTP answer by byStatus, with its Retry-After, and
// any other error as retry.DefaultClassifier does.
func httpAware(byStatus retry.Classifier) retry.Classifier {
	return func(ctx context.Context, a retry.Attempt) retry.Decision {
		var se *retryhttp.StatusError
		if !errors.As(a.Err, &se) {
			return retry.DefaultClassifier(ctx, a)
		}
		return withRetryAfter(byStatus(ctx, a), se)
	}
}

// withRetryAfter is d with the Retry-After of se's answer, if d retries.
func withRetryAfter(d retry.Decision, se *retryhttp.StatusError) retry.Decision {
	if !d.Retry || se.Header == nil {
		return d
	}
	if v := se.Header.Get("Retry-After"); v != "" {
		if ra, ok := retryhttp.ParseRetryAfter(v, time.Now(), maxRetryAfter); ok {
			d.RetryAfter = max(d.RetryAfter, ra)
		}
	}
	return d
}
