package crash

import (
	"cmp"
	"slices"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
)

// resultMessages records every AttemptResults message published on the
// results subject (a plain NATS subscription sees each publish, whatever
// the stream does with it) and how many results each carries: what a
// scheduler holding some of them unacknowledged holds in results.
type resultMessages struct {
	mu sync.Mutex
	// results is the results per message, by Nats-Msg-Id (a publish
	// retried under the same id is one message).
	results map[string]int
	// unread counts the messages that did not decode.
	unread int
}

// watchResults subscribes to the results subject of the suite's NATS
// server; call it before any result is published.
func (b *bundle) watchResults(t *testing.T) *resultMessages {
	t.Helper()
	nc, err := nats.Connect(b.natsServer().ClientURL(), nats.Name("crash-test-results"))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	r := &resultMessages{results: map[string]int{}}
	_, err = nc.Subscribe(event.SubjectResult, func(m *nats.Msg) {
		results, err := event.DecodeResults(m.Header.Get(event.TypeHeader), m.Data)
		r.mu.Lock()
		defer r.mu.Unlock()
		if err != nil {
			r.unread++
			return
		}
		r.results[m.Header.Get(jetstream.MsgIDHeader)] = len(results)
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush(), "subscribed before any result")
	return r
}

// largest returns the results of the n largest messages seen so far, in
// all, and the largest message's results.
func (r *resultMessages) largest(n int) (total, largest int) {
	r.mu.Lock()
	sizes := make([]int, 0, len(r.results))
	for _, s := range r.results {
		sizes = append(sizes, s)
	}
	r.mu.Unlock()
	slices.SortFunc(sizes, func(a, b int) int { return cmp.Compare(b, a) })
	for i, s := range sizes {
		if i == n {
			break
		}
		total += s
	}
	if len(sizes) > 0 {
		largest = sizes[0]
	}
	return total, largest
}

// count is how many messages were seen, and how many of them did not
// decode.
func (r *resultMessages) count() (messages, unread int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.results), r.unread
}
