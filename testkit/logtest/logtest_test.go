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
