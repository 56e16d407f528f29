package telemetry

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Buffering of the log lines. A service writes a line per unit of work (a
// delivery, a request): written one system call each, the writes were a
// visible share of a dispatcher's CPU in a burst, a large part of what a
// line costs (docs/observability.md). A LogBuffer gathers lines and writes
// them out together: when logBufferSize is reached, logFlushEvery after the
// first line waiting, at once for a warning or an error
// (NewBufferedLogger), and on Close. The price: a process killed outright (SIGKILL, a crash) loses
// the info lines of its last logFlushEvery; the database, not the log, is
// the record of what was delivered.
const (
	logBufferSize = 64 << 10
	logFlushEvery = 50 * time.Millisecond
)

// LogBuffer is an io.Writer that buffers whole lines for another. Call
// Close when the process is done logging; writes after it go straight
// through.
type LogBuffer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
	// timer flushes the lines logFlushEvery after the first of them: it
	// is set when a line lands in an empty buffer (a pending run that
	// finds the buffer empty does nothing).
	timer  *time.Timer
	closed bool
}

// NewLogBuffer returns a LogBuffer writing to w.
func NewLogBuffer(w io.Writer) *LogBuffer {
	b := &LogBuffer{w: w, buf: make([]byte, 0, logBufferSize)}
	b.timer = time.AfterFunc(time.Hour, b.flushDue)
	b.timer.Stop()
	return b
}

// Write takes one line (log/slog writes a whole line per call).
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return b.w.Write(p)
	}
	first := len(b.buf) == 0
	b.buf = append(b.buf, p...)
	if len(b.buf) >= logBufferSize {
		return len(p), b.flushLocked()
	}
	if first {
		b.timer.Reset(logFlushEvery)
	}
	return len(p), nil
}

// Flush writes out the lines waiting.
func (b *LogBuffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushLocked()
}

// Close writes out the lines waiting and stops buffering.
func (b *LogBuffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.timer.Stop()
	return b.flushLocked()
}

// flushDue is the timer's flush; a write error has nowhere to go but the
// next line's writer, which will meet it too.
func (b *LogBuffer) flushDue() {
	b.mu.Lock()
	defer b.mu.Unlock()
	_ = b.flushLocked()
}

func (b *LogBuffer) flushLocked() error {
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.w.Write(b.buf)
	b.buf = b.buf[:0]
	return err
}

// NewBufferedLogger is NewLogger writing through a LogBuffer, which it
// returns for the caller to Close on exit. A line at warning level or
// above is written out at once, with the lines before it.
func NewBufferedLogger(w io.Writer, service, level string) (*slog.Logger, *LogBuffer) {
	b := NewLogBuffer(w)
	log := NewLogger(b, service, level)
	return slog.New(flushingHandler{Handler: log.Handler(), b: b}), b
}

// flushingHandler flushes its LogBuffer after each warning or error.
type flushingHandler struct {
	slog.Handler
	b *LogBuffer
}

func (h flushingHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := h.b.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (h flushingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushingHandler{Handler: h.Handler.WithAttrs(attrs), b: h.b}
}

func (h flushingHandler) WithGroup(name string) slog.Handler {
	return flushingHandler{Handler: h.Handler.WithGroup(name), b: h.b}
}
