package delivery

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLegacyIPv4(t *testing.T) {
	t.Parallel()
	for _, host := range []string{
		"2130706433", "0x7f000001", "0X7F000001", "0177.0.0.1", "127.1", "127.0.1", "0", "00",
		"0x7f.1", "10.0.0.1.", "017700000001",
	} {
		require.True(t, legacyIPv4(host), host)
	}
	for _, host := range []string{
		"127.0.0.1", "8.8.8.8", "::1", "example.com", "cafe", "0x", "1e100.net", "0xg1",
		"1.2.3.4.5", "08.1.1.1", "a.0x1", "", "receiver.example.",
	} {
		require.False(t, legacyIPv4(host), host)
	}
}
