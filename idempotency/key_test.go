package idempotency_test

import (
	"strings"
	"testing"

	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseKey(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", idempotency.MaxKeyLength)
	for _, tc := range []struct {
		in, want string // want "" means refused
	}{
		{"8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324"},
		{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, "8e03978e-40d5-43e8-bc93-6894a57f9324"},
		{" \tabc\t ", "abc"},
		{`" abc "`, " abc "},
		{`"a\"b\\c"`, `a"b\c`},
		{`"{tag}:x/y"`, "{tag}:x/y"},
		{"!#$%&'*+-.^_`|~09azAZ", "!#$%&'*+-.^_`|~09azAZ"},
		{long, long},
		{`"` + long + `"`, long},
		{"", ""},
		{`""`, ""},
		{long + "k", ""},
		{"a b", ""},
		{"a,b", ""},
		{"a/b", ""},
		{`"abc`, ""},
		{`abc"`, ""},
		{`"a\b"`, ""},
		{`"a\"`, ""},
		{`"abc"x`, ""},
		{`"abc";p=1`, ""},
		{"\"a\x7fb\"", ""},
		{"\"a\tb\"", ""},
		{"é", ""},
	} {
		got, err := idempotency.ParseKey(tc.in)
		if tc.want == "" {
			assert.Error(t, err, "ParseKey(%q) = %q, want an error", tc.in, got)
			continue
		}
		require.NoError(t, err, "ParseKey(%q)", tc.in)
		assert.Equal(t, tc.want, got, "ParseKey(%q)", tc.in)
	}
}

func TestStoreKeyHasAScopePart(t *testing.T) {
	t.Parallel()
	a1, a2 := idempotency.StoreKey("alice", "k1"), idempotency.StoreKey("alice", "k2")
	b1 := idempotency.StoreKey("bob", "k1")
	for _, k := range []string{a1, a2, b1} {
		assert.Regexp(t, `^[0-9a-f]{16}:[0-9a-f]{64}$`, k)
	}
	scope := func(k string) string { return k[:strings.IndexByte(k, ':')] }
	assert.Equal(t, scope(a1), scope(a2), "one scope, one scope part")
	assert.NotEqual(t, scope(a1), scope(b1), "two scopes, two scope parts")
	assert.NotEqual(t, a1[17:], b1[17:], "the same key in two scopes is two keys, whatever the scope parts")
	assert.NotEqual(t, idempotency.StoreKey("ab", "c"), idempotency.StoreKey("a", "bc"), "scope and key cannot run into each other")
}
