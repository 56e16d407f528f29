// Package logtest collects what a service logs during a test, from any
// number of goroutines, so that the test can assert on it (a line was
// written, a secret never was).
package logtest

import (
	"bytes"
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
