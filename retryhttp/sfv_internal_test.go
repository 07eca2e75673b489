package retryhttp

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The structured-field scanner accepts what RFC 9651 §4.2 accepts of a
// List, and nothing else.
func TestSFList(t *testing.T) {
	t.Parallel()
	good := []string{
		``, ` `, `a`, `"a"`, `a, b`, `a,b`, "a,\tb", `a;x`, `a;x=1;y="s";z=?0;w=:AQ==:;v=tok/x:y;u=@-5;d=%"%c3%a9"`,
		`1, -2, 3.5, -0.125`, `("a" b;p=1 1);q=2, c`, `()`, `( a )`, `*tok`, `a;*k=1`, `a; x=1`, `"\"\\"`,
		`999999999999999`, `999999999999.999`, "a\t", // OWS after a member
	}
	bad := []string{
		`a,`, `,a`, `a,,b`, `"a`, `"\a"`, `a;X=1`, `a;=1`, `a;x=`, `1000000000000000`, `1.`, `1.2345`,
		`1234567890123.5`, `-`, `?2`, `:AQ==`, `@1.5`, `%"%C3%A9"`, `%"%ff"`, `%x`, `(a`, `(a)b`, `a b`,
		"\"a\u00e9\"", `a;x=(1)`, `{}`, `'a'`,
	}
	for _, v := range good {
		sc := newSFList(v)
		for sc.next() {
		}
		assert.False(t, sc.bad, "%q is a List", v)
	}
	for _, v := range bad {
		sc := newSFList(v)
		for sc.next() {
		}
		assert.True(t, sc.bad, "%q is not a List", v)
	}
}
