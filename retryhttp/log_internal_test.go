package retryhttp

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzRedactURL checks that the URL the Logger gets never panics and never
// depends on a secret: whatever the user info, the query values and the
// fragment, the logged form is the same, and it parses back with no user
// info, no query value and no bare parameter but REDACTED (if it has a host, as every URL
// net/http sends does). raw is any string, parsed as
// url.Parse would, or put in every field of a hand-made URL when it does
// not parse. Its seed corpus is in testdata/fuzz/FuzzRedactURL.
func FuzzRedactURL(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw, secret string) {
		u, err := url.Parse(raw)
		if err != nil {
			u = &url.URL{Scheme: "http", Host: "example.com", Path: raw, RawQuery: raw, Fragment: raw}
		}
		got := redactURL(u)

		// The same URL with every secret replaced by another.
		other := *u
		other.User = url.UserPassword(secret, secret)
		other.RawQuery = replaceQueryValues(u.RawQuery, url.QueryEscape(secret))
		other.Fragment, other.RawFragment = secret, ""
		if g := redactURL(&other); g != got {
			t.Fatalf("redactURL depends on a secret:\n%q\ngives %q, but\n%q\ngives %q", u, got, &other, g)
		}

		if err != nil || u.Host == "" {
			// A hand-made URL need not parse back, and net/http sends no
			// request without a host: without one, a path such as
			// "//alice:pw@x" comes back as an authority.
			return
		}
		back, err := url.Parse(got)
		if err != nil {
			return // url.URL.String does not always give a URL that parses
		}
		if back.User != nil {
			t.Fatalf("redactURL(%q) = %q keeps user info", raw, got)
		}
		for _, param := range strings.Split(back.RawQuery, "&") {
			if back.RawQuery == "" {
				break
			}
			if _, value, ok := strings.Cut(param, "="); ok && value != "REDACTED" || !ok && param != "REDACTED" {
				t.Fatalf("redactURL(%q) = %q keeps the query value %q", raw, got, param)
			}
		}
	})
}

// replaceQueryValues replaces the value of each parameter of a raw query
// with value, and each bare parameter (one without "=", which may be a
// token) with value as a whole.
func replaceQueryValues(rawQuery, value string) string {
	if rawQuery == "" {
		return ""
	}
	params := strings.Split(rawQuery, "&")
	for i, param := range params {
		if name, _, ok := strings.Cut(param, "="); ok {
			params[i] = name + "=" + value
		} else {
			params[i] = "p" + value // still a parameter, even for an empty value
		}
	}
	return strings.Join(params, "&")
}
