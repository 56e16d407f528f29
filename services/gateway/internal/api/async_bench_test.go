package api_test

import (
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// BenchmarkAckHook measures a receiver's ack, over HTTP against PostgreSQL:
// token check, the lock and the write of one transaction. Each iteration
// acks a different waiting hook.
func BenchmarkAckHook(b *testing.B) {
	s := asyncSetup(b)
	s.client = s.raw // the contract check would dominate the timing
	type waiting struct {
		id    uuid.UUID
		lease int64
	}
	hooks := make([]waiting, b.N)
	for i := range hooks {
		id, lease := s.waiting()
		hooks[i] = waiting{id, lease}
	}
	b.ResetTimer()
	for i := range b.N {
		got := s.post(s.url("ack", hooks[i].id, hooks[i].lease), jsonType, `{"ok":true}`)
		require.Equal(b, http.StatusOK, got.status)
	}
}
