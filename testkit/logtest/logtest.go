// Package logtest collects what a service logs during a test, from any
// number of goroutines, so that the test can assert on it (a line was
// written, a secret never was).
package logtest

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
)

// Buffer is an io.Writer safe for concurrent use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// FailureTail is how much of a service's or process's output a failed test
// logs (with Tail): at info level a service writes a line per delivery,
// megabytes in a load test, and the end holds the failure's moment.
const FailureTail = 256 << 10

// Tail returns the last max bytes written, from a line's start, after a
// line that says how much was left out: what a failed test logs of a
// service that wrote megabytes, of which the end (the failure's moment)
// is what a reader needs.
func (b *Buffer) Tail(max int) string {
	s := b.String()
	if len(s) <= max {
		return s
	}
	cut := len(s) - max
	if nl := strings.IndexByte(s[cut:], '\n'); nl >= 0 {
		cut += nl + 1
	}
	return fmt.Sprintf("[%d bytes before this left out]\n%s", cut, s[cut:])
}
