package retryhttp

import (
	"net/url"
	"strings"

	"github.com/stormguard/retry"
)

// Summary describes a request the [Transport] has finished, for
// [Transport.OnDone]: what it was, how it ended and its Trace. It holds no
// header, body, path or query: only what is safe to log and bounded in
// cardinality when named by a route.
type Summary struct {
	Method string // "GET"
	Origin string // scheme://host, with the port only if it is not the scheme's default
	Route  string // the request's name from WithRoute, or ""
	Status int    // the status of the response RoundTrip returned; 0 if it returned an error
	Trace  retry.Trace
	// Err is what RoundTrip returned, or, for a request that a panic ended
	// (see [Transport.OnDone]), an error that says so. Its text may quote
	// the URL: test it with errors.Is and errors.As, and log the Trace's
	// reasons instead.
	Err error
	// Stale, for a request answered with a stored response in place of
	// its failure (see [Transport.Stale]; Trace.Stop() is then
	// retry.StopStale), says why it failed and how old the answer was;
	// the zero value otherwise.
	Stale StaleAnswer
}

// Name returns the request's name for a metric or a panel: its Route, or
// else its method and origin ("GET https://api.example"), never its path,
// whose ids would make the names unbounded.
func (s Summary) Name() string {
	if s.Route != "" {
		return s.Route
	}
	return s.Method + " " + s.Origin
}

// origin returns scheme://host for u, lower case, without the scheme's
// default port: the unit that credentials and budgets are scoped to.
func origin(u *url.URL) string {
	if u == nil {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Host)
	switch {
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		host = strings.TrimSuffix(host, ":80")
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		host = strings.TrimSuffix(host, ":443")
	}
	return scheme + "://" + host
}
