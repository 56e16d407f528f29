package listen

import (
	"crypto/tls"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBoundCutsOnACharacterBoundary(t *testing.T) {
	t.Parallel()
	require.Equal(t, "abc", bound("abc", 3))
	require.Equal(t, "ab", bound("abc", 2))
	require.Equal(t, "a", bound("aé", 2), "é is two bytes: cut before it")
	require.Equal(t, "\uFFFDx", bound("\xffx", 10), "invalid UTF-8 is replaced")
	require.Len(t, bound(strings.Repeat("€", 1000), maxNackError), 1023)
}

func TestAcceptTimeout(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]int32{"": 0, "null": 0, "1": 1, "120": 120, "120.0": 120, "86400": 86400,
		"0": 0, "86401": 0, "1e12": 0} {
		got, ok := acceptTimeout(json.RawMessage(raw))
		require.True(t, ok, raw)
		require.Equal(t, want, got, raw)
	}
	for _, raw := range []string{"-1", "1.5", `"10"`, "true", "{}"} {
		_, ok := acceptTimeout(json.RawMessage(raw))
		require.False(t, ok, raw)
	}
}

func TestRecentHooksForgetsTheOldest(t *testing.T) {
	t.Parallel()
	r := newRecentHooks(3)
	for i := range 4 {
		r.add(strconv.Itoa(i))
	}
	r.add("3") // again: no effect
	require.False(t, r.has("0"))
	for _, id := range []string{"1", "2", "3"} {
		require.True(t, r.has(id), id)
	}
	require.Len(t, r.set, 3)
}

func TestSocketURL(t *testing.T) {
	t.Parallel()
	req := httptest.NewRequest("POST", "http://10.0.0.5:8080/v1/ws/ticket", nil)
	require.Equal(t, "ws://10.0.0.5:8080/v1/ws", NewTickets(nil, "").socketURL(req))
	req.TLS = &tls.ConnectionState{}
	require.Equal(t, "wss://10.0.0.5:8080/v1/ws", NewTickets(nil, "").socketURL(req))
	require.Equal(t, "wss://sundial.example.com/v1/ws", NewTickets(nil, "https://sundial.example.com/").socketURL(req))
	require.Equal(t, "ws://127.0.0.1:8080/x/v1/ws", NewTickets(nil, "http://127.0.0.1:8080/x").socketURL(req))
}
