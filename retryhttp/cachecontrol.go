package retryhttp

import (
	"net/http"
	"strings"
	"time"
)

// maxDeltaSeconds is the largest delta-seconds a cache need represent: RFC
// 9111 §1.2.2 has a cache take any greater value, or one that overflows, as
// 2147483648 seconds (about 68 years). Every Age, max-age and
// stale-if-error that a server sends is cut to it, so that none can overflow
// a time.Duration.
const maxDeltaSeconds = 2147483648

// cacheControl is what a Cache-Control field says that a stale cache needs
// (RFC 9111 §5.2, RFC 5861 §4). A delta-seconds directive that is absent or
// malformed is -1.
type cacheControl struct {
	noStore, noCache, mustRevalidate, private bool
	maxAge, sMaxAge, staleIfError             time.Duration
}

// parseCacheControl reads every Cache-Control line of h. Directive names
// are case-insensitive; a directive with a list of field names (no-cache="
// Set-Cookie", private="…") counts as the whole directive, which is the
// conservative reading for a cache that does not strip fields. Unknown
// directives are ignored, as RFC 9111 §5.2.3 asks.
func parseCacheControl(h http.Header) cacheControl {
	cc := cacheControl{maxAge: -1, sMaxAge: -1, staleIfError: -1}
	for _, line := range h.Values("Cache-Control") {
		for line != "" {
			var d string
			d, line, _ = strings.Cut(line, ",")
			name, arg, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store":
				cc.noStore = true
			case "no-cache":
				cc.noCache = true
			case "must-revalidate", "proxy-revalidate":
				cc.mustRevalidate = true
			case "private":
				cc.private = true
			case "max-age":
				cc.maxAge = deltaSeconds(arg)
			case "s-maxage":
				cc.sMaxAge = deltaSeconds(arg)
			case "stale-if-error":
				cc.staleIfError = deltaSeconds(arg)
			}
		}
	}
	return cc
}

// deltaSeconds reads a delta-seconds value (RFC 9111 §1.2.2: digits, in
// quotes tolerated as §5.2 asks), cut to maxDeltaSeconds; -1 if s is not
// one.
func deltaSeconds(s string) time.Duration {
	s = strings.Trim(strings.TrimSpace(s), `"`)
	if s == "" {
		return -1
	}
	var n int64
	for _, r := range s {
		if r < '0' || r > '9' {
			return -1
		}
		if n < maxDeltaSeconds {
			n = n*10 + int64(r-'0')
		}
	}
	return time.Duration(min(n, maxDeltaSeconds)) * time.Second
}

// freshness is a stored response's freshness lifetime (RFC 9111 §4.2.1):
// s-maxage, else max-age, else Expires minus Date; 0 when none is given,
// since a cache that serves only on error has no use for a heuristic one.
func (cc *cacheControl) freshness(h http.Header, date time.Time) time.Duration {
	switch {
	case cc.sMaxAge >= 0:
		return cc.sMaxAge
	case cc.maxAge >= 0:
		return cc.maxAge
	}
	if date.IsZero() {
		return 0
	}
	exp, err := http.ParseTime(h.Get("Expires"))
	if err != nil || !exp.After(date) {
		return 0
	}
	return min(exp.Sub(date), maxDeltaSeconds*time.Second)
}

// storableStatus reports whether a response with status may be stored: the
// successes among the statuses that RFC 9111 §4.2.2 lets a cache store
// without explicit freshness (200 OK, 203 Non-Authoritative Information,
// 204 No Content). A 206 answers a range rather than the request, and the
// other statuses that list names (a 404, a 301) are not answers worth
// serving in place of an error.
func storableStatus(status int) bool {
	switch status {
	case http.StatusOK, http.StatusNonAuthoritativeInfo, http.StatusNoContent:
		return true
	}
	return false
}

// credentialed reports whether req carries a credential whose response may
// be meant for that credential alone (RFC 9111 §3.5 for Authorization; a
// Cookie names a session just as well).
func credentialed(req *http.Request) bool {
	return req.Header.Get("Authorization") != "" || req.Header.Get("Cookie") != ""
}

// mayStore says whether resp, the answer to req, may be stored by a stale
// cache, and returns the response's Cache-Control. It never stores:
//   - a request other than GET or HEAD, a request for a Range, or one that
//     says no-store;
//   - a status other than those of storableStatus;
//   - a response that says no-store, or that forbids serving it stale
//     (no-cache, must-revalidate, proxy-revalidate: RFC 9111 §4.2.4);
//   - a response with Set-Cookie, which would hand one client's session to
//     another, or with Vary: *, which matches no later request;
//   - a response to a credentialed request unless perCredential (the cache
//     then keys it by the credential), nor a private one to a request
//     without a credential: this cache is shared by everything the
//     Transport sends.
func mayStore(req *http.Request, resp *http.Response, perCredential bool) (cacheControl, bool) {
	if !cacheable(req) || parseCacheControl(req.Header).noStore || !storableStatus(resp.StatusCode) {
		return cacheControl{}, false
	}
	cc := parseCacheControl(resp.Header)
	cred := credentialed(req)
	switch {
	case cc.noStore, cc.noCache, cc.mustRevalidate:
		return cc, false
	case len(resp.Header.Values("Set-Cookie")) > 0:
		return cc, false
	case cred && !perCredential, cc.private && !cred:
		return cc, false
	}
	for _, v := range resp.Header.Values("Vary") {
		if strings.Contains(v, "*") {
			return cc, false
		}
	}
	return cc, true
}

// cacheable reports whether req is one a stale cache may answer: a GET or
// a HEAD of a whole resource.
func cacheable(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead:
		return req.Header.Get("Range") == ""
	}
	return false
}

// varyNames returns the request fields that resp's Vary names (RFC 9111
// §4.1), canonical and in order.
func varyNames(h http.Header) []string {
	var names []string
	for _, v := range h.Values("Vary") {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, http.CanonicalHeaderKey(n))
			}
		}
	}
	return names
}

// fieldValue is the value of the request field name as Vary compares it:
// every line of it, joined as one list.
func fieldValue(h http.Header, name string) string {
	return strings.Join(h.Values(name), ", ")
}
