package retryconfig

import (
	"time"

	"github.com/stormguard/retry"
)

// memo keeps, while one document is parsed, the values of the fields whose
// text repeats from policy to policy (one jitter, one budget, one list of
// codes, one backoff, written a thousand times), so that each distinct text
// is parsed, and allocated, once: most of what a Live.Update of a large
// document would otherwise allocate. Only values that parsed are kept, so
// that every bad one is reported at its own path. The values are shared by
// the entries, which never modify them. A nil *memo parses every value.
type memo struct {
	durations map[string]time.Duration
	jitters   map[string]jitterText
	texts     map[string]string
	codes     map[string]codeLists
}

type jitterText struct {
	jitter retry.Jitter
	text   string // as written
}

type codeLists struct {
	http []int
	grpc []uint32
}

// remember returns the value of raw, parsed by parse, from *m if it is
// there, and keeps it in *m if it is not and m is not nil. Looking a []byte
// up as a string does not allocate.
func remember[V any](m *map[string]V, raw []byte, parse func([]byte) (V, error)) (V, error) {
	if m == nil {
		return parse(raw)
	}
	if v, ok := (*m)[string(raw)]; ok {
		return v, nil
	}
	v, err := parse(raw)
	if err == nil {
		if *m == nil {
			*m = make(map[string]V)
		}
		(*m)[string(raw)] = v
	}
	return v, err
}

func (m *memo) duration(raw []byte) (time.Duration, error) {
	if m == nil {
		return durationJSON(raw)
	}
	return remember(&m.durations, raw, durationJSON)
}

func (m *memo) jitter(raw []byte) (jitterText, error) {
	if m == nil {
		return parseJitterJSON(raw)
	}
	return remember(&m.jitters, raw, parseJitterJSON)
}

func (m *memo) text(raw []byte) (string, error) {
	if m == nil {
		return str(raw)
	}
	return remember(&m.texts, raw, str)
}

func (m *memo) codeLists(raw []byte) (codeLists, error) {
	if m == nil {
		return parseCodeLists(raw)
	}
	return remember(&m.codes, raw, parseCodeLists)
}

func parseJitterJSON(raw []byte) (jitterText, error) {
	s, err := str(raw)
	if err != nil {
		return jitterText{}, err
	}
	j, err := parseJitter(s)
	return jitterText{j, s}, err
}

func parseCodeLists(raw []byte) (codeLists, error) {
	http, grpc, err := parseCodes(raw)
	return codeLists{http, grpc}, err
}
