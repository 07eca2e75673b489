package retrygrpc

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/stormguard/retry/shed"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// priorityKey is the metadata key of a call's shed.Priority: the
// shed.PriorityHeader, lower-cased as gRPC metadata keys are.
var priorityKey = strings.ToLower(shed.PriorityHeader)

// UnaryServerInterceptor returns a server interceptor that admits each call
// through l before its handler runs, the gRPC twin of shed.Limiter.Handler:
//
//	s := grpc.NewServer(grpc.ChainUnaryInterceptor(retrygrpc.UnaryServerInterceptor(l)))
//
// A call's shed.Priority is read from its metadata key "criticality" (the
// shed.PriorityHeader; values as shed.Priority.String writes them, and
// [WithPriority] sends them); a missing or unknown value is shed.Critical.
//
// A shed call never reaches the handler: it ends with UNAVAILABLE and the
// trailer grpc-retry-pushback-ms (gRFC A6, "Pushback"), the wait that
// shed.RetryAfterOf reads from the refusal, in milliseconds, jittered per
// call so that the shed clients do not come back at one instant. This
// package's client interceptors wait that long before they retry, and
// hold back every other call to the target meanwhile; grpc-go's own
// retries wait it too. A call whose client gave up while it waited for a
// slot ends with CANCELLED or DEADLINE_EXCEEDED, and no pushback.
//
// The handler's status tells l what the work showed: OK, and any code not
// below, is a shed.Success whose latency is a sample; UNAVAILABLE,
// RESOURCE_EXHAUSTED and DEADLINE_EXCEEDED are shed.Overloaded (the
// handler's own dependency refused or timed out); a call its client
// canceled is shed.Ignored, and so is one whose handler panicked, whose
// slot is given back before the panic goes on.
//
// Put it first in the chain, before interceptors that do work (auth,
// logging of bodies), so that a shed call costs as little as it can.
func UnaryServerInterceptor(l *shed.Limiter) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		release, err := l.Acquire(ctx, incomingPriority(ctx))
		if err != nil {
			return nil, refusal(err, func(md metadata.MD) { _ = grpc.SetTrailer(ctx, md) })
		}
		done := false
		defer func() {
			if !done { // the handler panicked
				release(shed.Ignored)
			}
		}()
		resp, err = handler(ctx, req)
		done = true
		release(serverOutcome(ctx, err))
		return resp, err
	}
}

// StreamServerInterceptor returns a server interceptor that admits each
// stream through l as [UnaryServerInterceptor] admits a call, and holds
// its slot until the handler returns: the whole stream counts as one
// request in flight, and its duration as the latency sample. Give
// long-lived streams (a watch, a subscription) a server of their own or no
// Limiter: their duration says nothing of the load, and an adaptive limit
// would take it for queueing.
func StreamServerInterceptor(l *shed.Limiter) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		ctx := ss.Context()
		release, err := l.Acquire(ctx, incomingPriority(ctx))
		if err != nil {
			return refusal(err, ss.SetTrailer)
		}
		done := false
		defer func() {
			if !done {
				release(shed.Ignored)
			}
		}()
		err = handler(srv, ss)
		done = true
		release(serverOutcome(ctx, err))
		return err
	}
}

// incomingPriority is the shed.Priority in the call's metadata, or
// shed.Critical.
func incomingPriority(ctx context.Context) shed.Priority {
	vs := metadata.ValueFromIncomingContext(ctx, priorityKey)
	if len(vs) == 0 {
		return shed.Critical
	}
	p, _ := shed.ParsePriority(vs[0])
	return p
}

// loadShedKey is shed.LoadShedHeader as a trailer key: the pushback of a
// shed call is that call's wait, not a hold of the whole target.
var loadShedKey = strings.ToLower(shed.LoadShedHeader)

// refusal is the status of a call that Acquire did not admit: UNAVAILABLE
// with the pushback for a shed one, its ctx's status for one whose client
// gave up.
func refusal(err error, setTrailer func(metadata.MD)) error {
	if !errors.Is(err, shed.ErrShed) {
		return status.FromContextError(err).Err()
	}
	ms := min(shed.RetryAfterOf(err).Milliseconds(), math.MaxInt32) // A6: a signed 32-bit integer
	setTrailer(metadata.MD{pushbackKey: []string{strconv.FormatInt(ms, 10)}, loadShedKey: []string{"request"}})
	return status.Error(codes.Unavailable, err.Error())
}

// serverOutcome is what a handler's status says of the load.
func serverOutcome(ctx context.Context, err error) shed.Outcome {
	if errors.Is(ctx.Err(), context.Canceled) {
		return shed.Ignored // the client went away: what the handler made of it says nothing of the load
	}
	if err == nil {
		return shed.Success
	}
	switch status.Code(err) {
	case codes.Canceled:
		return shed.Ignored
	case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded:
		return shed.Overloaded
	}
	return shed.Success
}
