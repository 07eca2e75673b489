package retrydebug

import "github.com/stormguard/retry/retryhttp"

// httpMethod returns the method of a request as the page names it: m if
// the OpenTelemetry HTTP semantic conventions know it (they are
// case-sensitive), "GET" for the empty method that net/http sends as GET,
// and "HTTP", the conventions' span name for any other, so that made-up
// methods cannot use up the Recorder's operations.
func httpMethod(m string) string {
	switch m {
	case "":
		return "GET"
	case "CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE", "QUERY":
		return m
	}
	return "HTTP"
}

// httpName returns the operation of s: its route, or its method and
// origin ("GET https://api.example"), never its path.
func httpName(s *retryhttp.Summary) string {
	if s.Route != "" {
		return s.Route
	}
	return httpMethod(s.Method) + " " + s.Origin
}
