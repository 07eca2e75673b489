package retrygrpc

import (
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// pushbackKey is the trailer in which a server asks the client to wait
// before it retries, in milliseconds, or not to retry at all (gRFC A6,
// "Pushback").
const pushbackKey = "grpc-retry-pushback-ms"

// pushback returns the wait the trailer md asks for, zero when it asks for
// none, and false when it asks that the call not be retried: A6 reads a
// negative or unparsable value so, and grpc-go reads several values so too.
// A value must fit a signed 32-bit integer, as A6 says.
func pushback(md metadata.MD) (time.Duration, bool) {
	vs := md[pushbackKey] // received metadata has lower-case keys
	switch len(vs) {
	case 0:
		return 0, true
	case 1:
	default:
		return 0, false
	}
	ms, err := strconv.ParseInt(vs[0], 10, 32)
	if err != nil || ms < 0 {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// retryInfoDelay returns the retry_delay of a google.rpc.RetryInfo among
// the details of err's status, or zero if there is none or it is not a
// valid, non-negative duration.
func retryInfoDelay(err error) time.Duration {
	st, ok := status.FromError(err)
	if !ok {
		return 0
	}
	for _, d := range st.Details() {
		ri, ok := d.(*errdetails.RetryInfo)
		if !ok {
			continue
		}
		rd := ri.GetRetryDelay()
		if rd.CheckValid() != nil {
			return 0
		}
		return max(rd.AsDuration(), 0)
	}
	return 0
}
