package hook_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
)

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
