package signing_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"runtime"
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
// Not parallel: the allocation counts are the whole process's.
//
// Counted call by call rather than averaged (testing.AllocsPerRun): under
// the race detector, which make test uses, sync.Pool drops a random
// quarter of what is put back, so some calls make a new state; a pool that
// never gave one back would make one in every call.
func TestSigningAllocatesOnlyItsResult(t *testing.T) {
	body := []byte(`{"id":"x"}`)
	const calls = 200
	within := callsAllocatingAtMost(calls, 1, func() { _ = signing.Entry("sdsig_key", 1700000000, body) })
	require.GreaterOrEqual(t, within, calls/2, "Entry: calls that allocated only their result")
	within = callsAllocatingAtMost(calls, 1, func() { _ = signing.Legacy("sdsig_key", body) })
	require.GreaterOrEqual(t, within, calls/2, "Legacy: calls that allocated only their result")
}

// callsAllocatingAtMost calls f n times, on one processor as
// testing.AllocsPerRun does, and returns how many of the calls allocated
// at most limit objects.
func callsAllocatingAtMost(n int, limit uint64, f func()) int {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f() // the pool's first state
	var before, after runtime.MemStats
	within := 0
	for range n {
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		if after.Mallocs-before.Mallocs <= limit {
			within++
		}
	}
	return within
}
