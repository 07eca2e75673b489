package retryhttp

import (
	"context"
	"slices"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
)

// NamedPolicy returns cfg's policy name ("" for "default"), with a
// Classifier for its retryableStatusCodes when it lists them and the policy
// has no Classifier: the policy a Transport with Policies gives a request
// of that name, for another integration (the outbox) to judge HTTP answers
// alike.
func NamedPolicy(cfg *retryconfig.Config, name string) retry.Policy {
	if name == "" {
		name = retryconfig.DefaultName
	}
	p := cfg.Policy(name)
	if codes := cfg.HTTPStatusCodes(name); codes != nil && p.Classifier == nil {
		p.Classifier = statusCodes(codes).classify
	}
	return p
}

// statusCodes is a retryableStatusCodes list: it replaces the statuses
// that DefaultClassifier retries, and leaves everything else (errors,
// responses that CheckResponse failed) to it.
type statusCodes []int

func (codes statusCodes) classify(ctx context.Context, a retry.Attempt) retry.Decision {
	se, ok := a.Err.(*StatusError)
	if !ok {
		se = asStatusError(a.Err)
	}
	if se == nil || se.Err != nil {
		return DefaultClassifier(ctx, a)
	}
	return retry.Decision{Retry: slices.Contains(codes, se.StatusCode), Reason: statusText(se.StatusCode)}
}
