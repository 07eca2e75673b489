package retryconfig

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Marshal writes the same bytes under every Go release: a name with
// invalid UTF-8 (which a flag can give) is written with \ufffd, as Go
// 1.26's encoding/json wrote it and Go 1.27's does not; valid text is
// escaped as encoding/json escapes it.
func TestAppendStringIsTheSameUnderEveryRelease(t *testing.T) {
	t.Parallel()
	assert.Equal(t, `"a\ufffdb"`, string(appendString(nil, "a\xffb")))
	assert.Equal(t, `"\u2028\u2029"`, string(appendString(nil, "\u2028\u2029")))
	var all []byte
	for c := range 0x80 {
		all = append(all, byte(c))
	}
	for _, s := range []string{string(all), "/shop.Orders/Get", "payments-eu", "é ü 日本 😀", `"\`} {
		want, err := json.Marshal(s)
		assert.NoError(t, err)
		assert.Equal(t, string(want), string(appendString(nil, s)), "%q", s)
	}
}
