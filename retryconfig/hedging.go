package retryconfig

import "math"

// maxGRPCAttempts is gRFC A6's cap on maxAttempts, of retries and hedging:
// larger values are treated as 5.
const maxGRPCAttempts = 5

// parseHedging reads a hedgingPolicy as gRFC A6 writes it: maxAttempts
// (required, above 1, capped at 5), hedgingDelay (optional) and
// nonFatalStatusCodes (optional). In a service config, unknown fields are
// ignored (gRFC A21); in our format they are errors.
func parseHedging(v *value, service bool) (*Hedging, error) {
	fields, err := object(v)
	if err != nil {
		return nil, err
	}
	h := &Hedging{}
	for _, f := range fields {
		if service && isNull(f.val) {
			continue // absent, as for grpc-go
		}
		switch f.key {
		case "maxAttempts":
			n, err := grpcAttempts(f.val)
			if err != nil {
				return nil, errorf("maxAttempts: %v", err)
			}
			h.MaxAttempts = n
		case "hedgingDelay":
			read := durationJSON
			if service {
				read = protoDuration
			}
			d, err := read(f.val)
			if err != nil {
				return nil, errorf("hedgingDelay: %v", err)
			}
			h.Delay = d
		case "nonFatalStatusCodes":
			cs, err := grpcCodes(f.val)
			if err != nil {
				return nil, errorf("nonFatalStatusCodes: %v", err)
			}
			h.NonFatalCodes = cs
		default:
			if !service {
				return nil, errorf("%s: unknown field (want maxAttempts, hedgingDelay or nonFatalStatusCodes)", f.key)
			}
		}
	}
	if h.MaxAttempts < 2 {
		return nil, errorf("maxAttempts: %d must be above 1", h.MaxAttempts)
	}
	h.MaxAttempts = min(h.MaxAttempts, maxGRPCAttempts)
	return h, nil
}

// grpcCodes reads a list of gRPC codes, as names or, as service configs
// may write them, numbers 0 to 16.
func grpcCodes(v *value) ([]uint32, error) {
	els, err := elements(v)
	if err != nil {
		return nil, err
	}
	cs := make([]uint32, 0, len(els))
	for i, el := range els {
		if el.kind == kindString {
			c, ok := grpcCode(el.text)
			if !ok {
				return nil, errorf("[%d]: %q is not a gRPC code name such as \"UNAVAILABLE\"", i, el.text)
			}
			cs = append(cs, c)
			continue
		}
		n, err := integer(el)
		if err != nil || n < 0 || n >= len(grpcNames) {
			return nil, errorf("[%d]: %s is not a gRPC code", i, describe(el))
		}
		cs = append(cs, uint32(n))
	}
	return cs, nil
}

// grpcAttempts reads a maxAttempts: a whole number, any above 5 taken as
// 5, as gRFC A6 and grpc-go take it (3000000000 is 5, not an error).
func grpcAttempts(v *value) (int, error) {
	f, err := number(v)
	switch {
	case err != nil:
		return 0, err
	case f != math.Trunc(f):
		return 0, errorf("%s is not a whole number", describe(v))
	case f > maxGRPCAttempts:
		return maxGRPCAttempts, nil
	case f < 0:
		return 0, nil // reported as "must be above 1"
	}
	return int(f), nil
}
