package signing

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHeadersSetSignsUnderThePrefix(t *testing.T) {
	t.Parallel()
	keys := []string{"active", "previous"}
	body := []byte(`{"a":1}`)
	h := http.Header{}
	NewHeaders("Acme").Set(h, "hook-1", keys, 1700000000, body)
	require.Equal(t, http.Header{
		"Acme-Id":          {"hook-1"},
		"Acme-Timestamp":   {"1700000000"},
		"Acme-Signature":   {Header(keys, 1700000000, body)},
		"X-Acme-Signature": {Legacy("active", body)},
	}, h)
	require.Equal(t, "Sundial-Signature", NewHeaders(DefaultHeaderPrefix).Signature)
}
