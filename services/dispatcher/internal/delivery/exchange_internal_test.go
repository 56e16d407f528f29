package delivery

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestExchangeErrIsItsBoundedContexts holds exchange.err to what a context
// with the exchange's deadline says: nothing before the deadline, the
// deadline from it on, and the caller's end, whichever comes first; and
// the bounded context is made only when asked for.
func TestExchangeErrIsItsBoundedContexts(t *testing.T) {
	t.Parallel()
	t.Run("before the deadline", func(t *testing.T) {
		t.Parallel()
		x := newExchange(context.Background(), time.Now().Add(time.Hour))
		defer x.end()
		require.NoError(t, x.err())
		require.Nil(t, x.bounded, "no bounded context made unasked")
		bounded := x.context()
		deadline, ok := bounded.Deadline()
		require.True(t, ok)
		require.Equal(t, x.deadline, deadline)
		require.Same(t, bounded, x.context(), "made once")
		require.NoError(t, bounded.Err())
		x.end()
		require.ErrorIs(t, bounded.Err(), context.Canceled, "end releases it")
	})
	t.Run("from the deadline on", func(t *testing.T) {
		t.Parallel()
		x := newExchange(context.Background(), time.Now())
		defer x.end()
		require.ErrorIs(t, x.err(), context.DeadlineExceeded)
		require.ErrorIs(t, x.context().Err(), context.DeadlineExceeded)
	})
	t.Run("the caller's end", func(t *testing.T) {
		t.Parallel()
		parent, cancel := context.WithCancelCause(context.Background())
		x := newExchange(parent, time.Now().Add(time.Hour))
		defer x.end()
		cancel(fmt.Errorf("shutting down"))
		require.ErrorIs(t, x.err(), context.Canceled)
		require.ErrorIs(t, x.context().Err(), context.Canceled)
	})
	t.Run("the caller's end after the deadline", func(t *testing.T) {
		t.Parallel()
		parent, cancel := context.WithCancel(context.Background())
		x := newExchange(parent, time.Now().Add(-time.Second))
		defer x.end()
		cancel()
		require.ErrorIs(t, x.err(), context.Canceled, "the caller's end wins, as in a context with a deadline")
	})
}
