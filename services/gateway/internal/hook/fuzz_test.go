package hook_test

import (
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
)

// postInGrammar is the oracle for postIn, written without regular
// expressions: up to four groups of ASCII digits, each followed by its
// unit, the units in the order d, h, m, s, at least one group. It returns
// the total in seconds (of any size), or false when s does not match.
func postInGrammar(s string) (*big.Int, bool) {
	units := []struct {
		letter byte
		secs   int64
	}{{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}}
	total := new(big.Int)
	groups := 0
	for s != "" {
		digits := 0
		for digits < len(s) && s[digits] >= '0' && s[digits] <= '9' {
			digits++
		}
		if digits == 0 || digits == len(s) {
			return nil, false
		}
		next := -1
		for i, u := range units {
			if u.letter == s[digits] {
				next = i
			}
		}
		if next < 0 {
			return nil, false
		}
		n, _ := new(big.Int).SetString(s[:digits], 10)
		total.Add(total, n.Mul(n, big.NewInt(units[next].secs)))
		units = units[next+1:] // the next group must use a later unit
		s = s[digits+1:]
		groups++
	}
	return total, groups > 0
}

// canonical writes d the way a client would: each non-zero unit once.
func canonical(d time.Duration) string {
	secs := int64(d / time.Second)
	var b strings.Builder
	for _, u := range []struct {
		letter string
		secs   int64
	}{{"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}} {
		if n := secs / u.secs; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.letter)
			secs -= n * u.secs
		}
	}
	return b.String()
}

// FuzzParsePostIn checks ParsePostIn against the grammar oracle: it never
// panics, accepts exactly the strings of the grammar whose total is within
// 1s..365d, returns that total, and its result written canonically parses
// back to itself. Seeds: testdata/fuzz/FuzzParsePostIn.
func FuzzParsePostIn(f *testing.F) {
	lo, hi := big.NewInt(int64(hook.MinPostIn/time.Second)), big.NewInt(int64(hook.MaxPostIn/time.Second))
	f.Fuzz(func(t *testing.T, s string) {
		d, msg := hook.ParsePostIn(s)
		total, matches := postInGrammar(s)
		inBounds := matches && total.Cmp(lo) >= 0 && total.Cmp(hi) <= 0
		if !inBounds {
			require.NotEmpty(t, msg, "accepted %q as %s", s, d)
			require.Zero(t, d)
			return
		}
		require.Empty(t, msg, "refused %q", s)
		require.Equal(t, total.Int64(), int64(d/time.Second), "%q", s)
		require.Zero(t, d%time.Second)
		require.GreaterOrEqual(t, d, hook.MinPostIn)
		require.LessOrEqual(t, d, hook.MaxPostIn)
		again, msg := hook.ParsePostIn(canonical(d))
		require.Empty(t, msg, "canonical form %q of %q", canonical(d), s)
		require.Equal(t, d, again)
	})
}

// FuzzValidatePath checks the path rules from the other side: whatever
// path is accepted, the delivery URL built from it keeps the project's
// host and scheme, and the path has no whitespace, control character,
// fragment or ".." segment, however it is decoded. Seeds:
// testdata/fuzz/FuzzValidatePath.
func FuzzValidatePath(f *testing.F) {
	postIn := "1m"
	f.Fuzz(func(t *testing.T, path string) {
		if !utf8.ValidString(path) {
			return // the strict decoder refuses invalid UTF-8 before validation
		}
		p := path
		n, err := hook.CreateRequest{Path: &p, Data: []byte(`{}`), PostIn: &postIn}.Validate(1024)
		if err != nil {
			return
		}
		require.Equal(t, path, n.Path)
		require.True(t, strings.HasPrefix(path, "/"))
		require.LessOrEqual(t, len(path), hook.MaxPathBytes)
		require.False(t, strings.ContainsAny(path, "#"))
		require.Negative(t, strings.IndexFunc(path, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), "%q", path)

		u, err := url.Parse("https://hooks.example.com" + path)
		require.NoError(t, err, "%q", path)
		require.Equal(t, "https", u.Scheme)
		require.Equal(t, "hooks.example.com", u.Host, "%q", path)
		require.Nil(t, u.User)
		req, err := http.NewRequest(http.MethodPost, "https://hooks.example.com"+path, nil)
		require.NoError(t, err, "%q", path)
		require.Equal(t, "hooks.example.com", req.URL.Host)

		pathPart, _, _ := strings.Cut(path, "?")
		decoded, err := url.PathUnescape(pathPart)
		require.NoError(t, err)
		for _, segment := range strings.FieldsFunc(decoded, func(r rune) bool { return r == '/' || r == '\\' }) {
			require.NotEqual(t, "..", segment, "%q", path)
		}
	})
}
