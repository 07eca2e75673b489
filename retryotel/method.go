package retryotel

import "go.opentelemetry.io/otel/attribute"

// The span attributes of an HTTP request, from the OpenTelemetry HTTP
// semantic conventions.
const (
	methodKey        = attribute.Key("http.request.method")
	serverAddressKey = attribute.Key("server.address")
)

// otherMethod is the operation, and the span name, of a request without a
// route whose method is not one the HTTP semantic conventions know: they
// name such a span "HTTP" and record its method as "_OTHER".
const otherMethod = "HTTP"

// httpMethod returns m if the HTTP semantic conventions know it (they are
// case-sensitive), "GET" for the empty method that net/http sends as GET,
// and "_OTHER" for anything else, so that a client that sends made-up
// methods cannot make the attribute's values unbounded.
func httpMethod(m string) string {
	switch m {
	case "":
		return "GET"
	case "CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE", "QUERY":
		return m
	}
	return otherOperation
}

// httpOperation returns the operation of a request without a route: its
// method, as the semantic conventions name an HTTP client span whose route
// is unknown ("GET"), or "HTTP" for a method they do not know. Never its
// host: a client of per-tenant hosts would make a series per tenant.
func httpOperation(method string) string {
	if m := httpMethod(method); m != otherOperation {
		return m
	}
	return otherMethod
}
