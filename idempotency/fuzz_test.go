package idempotency_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/stormguard/retry/idempotency"
)

// FuzzParseKey checks the key parser on any header value: it never panics;
// a key it accepts is non-empty, within MaxKeyLength and printable ASCII;
// and the quoted form of any accepted key, and its bare form where it is a
// token, parse back to the same key, so that the forms are one key. Its seed corpus is in
// testdata/fuzz/FuzzParseKey.
func FuzzParseKey(f *testing.F) {
	f.Fuzz(func(t *testing.T, v string) {
		key, err := idempotency.ParseKey(v)
		if err != nil {
			return
		}
		if key == "" || len(key) > idempotency.MaxKeyLength {
			t.Fatalf("ParseKey(%q) = %q: empty or too long", v, key)
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("ParseKey(%q) = %q: byte %#x is not printable ASCII", v, key, key[i])
			}
		}
		if bare, err := idempotency.ParseKey(key); isToken(key) && (err != nil || bare != key) {
			t.Fatalf("ParseKey(%q) = %q, but the key as a bare token gives %q", v, key, bare)
		}
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		again, err := idempotency.ParseKey(quoted)
		if err != nil || again != key {
			t.Fatalf("ParseKey(%q) = %q, but its quoted form %q gives %q, %v", v, key, quoted, again, err)
		}
	})
}

// isToken reports whether s is an RFC 9110 token: a key that can be sent
// bare.
func isToken(s string) bool {
	const tchars = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(tchars, s[i]) < 0 {
			return false
		}
	}
	return s != ""
}

// FuzzReplay checks that a replay survives any saved result: garbage gives
// a 500, never a panic, and a well-formed one comes back as it was saved.
func FuzzReplay(f *testing.F) {
	f.Add([]byte{}, 201, "Location", "/orders/1", []byte(`{"id":1}`))
	f.Add([]byte{1, 0, 0, 200, 0xff, 0xff, 0xff, 0xff, 0x0f}, 200, "", "", []byte(nil))
	f.Fuzz(func(t *testing.T, garbage []byte, status int, name, value string, body []byte) {
		rec := httptest.NewRecorder()
		idempotency.Replay(rec, garbage)
		if rec.Code != http.StatusInternalServerError && rec.Header().Get(idempotency.ReplayedHeader) != "true" {
			t.Fatalf("replay of %q: status %d without %s", garbage, rec.Code, idempotency.ReplayedHeader)
		}
		status = 200 + (status&0x7fffffff)%400
		header := http.Header{}
		// Session headers are never saved, and a TrailerPrefix name is a
		// trailer, not a header.
		if name != "" && !idempotency.NotSaved(name) && !strings.HasPrefix(name, http.TrailerPrefix) {
			header[name] = []string{value}
		}
		rec = httptest.NewRecorder()
		idempotency.Replay(rec, idempotency.EncodeRecord(status, header, body))
		want := header.Clone()
		want.Set(idempotency.ReplayedHeader, "true")
		if rec.Code != status || !reflect.DeepEqual(rec.Header(), want) || !bytes.Equal(rec.Body.Bytes(), body) {
			t.Fatalf("replay of (%d, %v, %q) = (%d, %v, %q)", status, header, body, rec.Code, rec.Header(), rec.Body.Bytes())
		}
	})
}
