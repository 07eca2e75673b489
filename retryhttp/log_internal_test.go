package retryhttp

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
)

// FuzzRedactURL checks that the URL the Logger gets never panics and never
// depends on a secret: whatever the user info, the query, the fragment and
// the path parameters, the logged form is the same, and it holds none of
// them. raw is any string, parsed as url.Parse would, or put in every field
// of a hand-made URL when it does not parse. Its seed corpus is in
// testdata/fuzz/FuzzRedactURL.
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
		if u.RawQuery != "" || u.ForceQuery {
			other.RawQuery = url.QueryEscape(secret) + "=" + url.QueryEscape(secret)
		}
		other.Fragment, other.RawFragment = secret, ""
		if strings.Contains(u.Path, ";") {
			other.Path = strings.ReplaceAll(u.Path, ";", ";"+strings.ReplaceAll(secret, "/", "")+";")
			other.RawPath = ""
		}
		if g := redactURL(&other); g != got {
			t.Fatalf("redactURL depends on a secret:\n%q\ngives %q, but\n%q\ngives %q", u, got, &other, g)
		}

		if u.Opaque != "" {
			if got != u.Scheme+":REDACTED" {
				t.Fatalf("redactURL(%q) = %q, want the opaque part redacted", raw, got)
			}
			return
		}
		head, query, hasQuery := strings.Cut(got, "?")
		if hasQuery != (u.RawQuery != "" || u.ForceQuery) || hasQuery && query != "REDACTED" {
			t.Fatalf("redactURL(%q) = %q: want ?REDACTED exactly when there is a query", raw, got)
		}
		if strings.Contains(head, "#") && !strings.Contains(u.EscapedPath(), "%23") {
			t.Fatalf("redactURL(%q) = %q keeps a fragment", raw, got)
		}
		if u.User != nil && u.User.String() != "" && strings.Contains(got, u.User.String()+"@") {
			t.Fatalf("redactURL(%q) = %q keeps user info", raw, got)
		}
	})
}

// The key's fingerprint is keyed: not the plain SHA-256 that a brute force
// of low-entropy keys (order-0000000 … order-9999999) would reverse, yet the
// same for the same key within the process, so that log lines match.
func TestFingerprintIsKeyed(t *testing.T) {
	t.Parallel()
	key := "order-0471193"
	plain := sha256.Sum256([]byte(key))
	fp := fingerprint(key)
	if strings.Contains(fp, hex.EncodeToString(plain[:4])) {
		t.Fatalf("fingerprint(%q) = %q holds the unkeyed hash", key, fp)
	}
	if fingerprint(key) != fp {
		t.Fatalf("fingerprint is not stable within the process")
	}
	if fingerprint("order-0471194") == fp {
		t.Fatalf("two keys share a fingerprint")
	}
}

func TestOrigin(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://API.example.com/x":     "https://api.example.com",
		"https://api.example.com:443/x": "https://api.example.com",
		"http://api.example.com:80/x":   "http://api.example.com",
		"http://api.example.com:443/x":  "http://api.example.com:443",
		"https://api.example.com:8443":  "https://api.example.com:8443",
		"http://127.0.0.1:9/":           "http://127.0.0.1:9",
		"http://[::1]:80/":              "http://[::1]",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := origin(u); got != want {
			t.Errorf("origin(%q) = %q, want %q", raw, got, want)
		}
	}
	https, _ := url.Parse("https://h.example/")
	http, _ := url.Parse("http://h.example/")
	if origin(https) == origin(http) {
		t.Errorf("https and http of one host are one origin: a credential could be downgraded")
	}
}
