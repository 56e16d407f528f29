package logtest

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBufferKeepsEveryConcurrentWrite(t *testing.T) {
	t.Parallel()
	var b Buffer
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() { _, _ = fmt.Fprintf(&b, "line %d\n", i) })
	}
	wg.Wait()
	require.Len(t, strings.Split(strings.TrimSpace(b.String()), "\n"), 50)
}

func TestTailKeepsTheLastWholeLines(t *testing.T) {
	t.Parallel()
	var b Buffer
	_, _ = b.Write([]byte("first\nsecond\nthird\n"))
	require.Equal(t, "first\nsecond\nthird\n", b.Tail(100), "all of it when it fits")
	// The last 8 bytes start inside "second": that line is left out whole.
	require.Equal(t, "[13 bytes before this left out]\nthird\n", b.Tail(8))
}
