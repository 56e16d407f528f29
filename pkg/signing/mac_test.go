package signing_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/signing"
)

// TestMACIsCryptoHMAC checks the pooled HMAC against crypto/hmac for keys
// shorter than, as long as and longer than SHA-256's 64-byte block, and
// for messages in one part and in several, larger than its buffer.
func TestMACIsCryptoHMAC(t *testing.T) {
	t.Parallel()
	msg := []byte(strings.Repeat("0123456789abcdefghij", 20))
	for _, n := range []int{0, 1, 32, 63, 64, 65, 100, 200} {
		key := []byte(strings.Repeat("k", n))
		want := hmac.New(sha256.New, key)
		want.Write(msg)
		require.Equal(t, want.Sum(nil), signing.AppendHMAC(nil, key, msg), "key of %d bytes, one part", n)
		require.Equal(t, want.Sum(nil), signing.AppendHMAC([]byte{}, key, msg[:1], msg[1:70], nil, msg[70:]),
			"key of %d bytes, four parts", n)
	}
}

// TestSigningAllocatesOnlyItsResult checks that a signature costs its
// result's allocation and no hash state of its own (the pooled states).
// Not parallel: testing.AllocsPerRun counts the whole process's allocations.
func TestSigningAllocatesOnlyItsResult(t *testing.T) {
	body := []byte(`{"id":"x"}`)
	require.LessOrEqual(t, testing.AllocsPerRun(100, func() {
		_ = signing.Entry("sdsig_key", 1700000000, body)
	}), 1.0)
	require.LessOrEqual(t, testing.AllocsPerRun(100, func() {
		_ = signing.Legacy("sdsig_key", body)
	}), 1.0)
}
