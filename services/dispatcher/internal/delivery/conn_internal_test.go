package delivery

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/egress"
)

// TestWriteHeaderIsHeaderWrite holds writeHeader to http.Header.Write's
// output: fields in the order of their names, line breaks in values made
// spaces, blanks around values trimmed, several values of one name, and
// more names than writeHeader's array holds.
func TestWriteHeaderIsHeaderWrite(t *testing.T) {
	t.Parallel()
	c, err := NewClient(Options{Timeout: time.Second, HeaderPrefix: "Acme", UserAgent: "ua", Guard: egress.NewGuard(false, nil)})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	r := Request{HookID: "0190b6a4-7f1e-7c3a-9f5e-2a1b3c4d5e6f", URL: "https://a.example/x", Path: "/x",
		Data: []byte(`{}`), Keys: []string{"k1", "k2"}, Scheme: "both", Authorization: " Bearer a\r\nInjected: 1 "}
	headers := []http.Header{
		c.Prepare(r, time.Unix(1700000000, 0)).Header,
		{"B": {"2", " two "}, "A": {"1\n1"}, "C": {""}},
		{},
	}
	many := http.Header{}
	for i := range 40 {
		many.Set(fmt.Sprintf("X-Field-%02d", 40-i), fmt.Sprint(i))
	}
	headers = append(headers, many)
	for _, h := range headers {
		var want, got bytes.Buffer
		require.NoError(t, h.Write(&want))
		writeHeader(&got, h)
		require.Equal(t, want.String(), got.String())
	}
}
