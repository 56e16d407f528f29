package crash

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// blockingReceiver is an HTTPS endpoint that counts deliveries by Sundial-Id
// and holds the first `hold` requests until released, so that deliveries
// are in flight when the dispatcher dies; it answers 200 to the rest at once.
type blockingReceiver struct {
	srv    *httptest.Server
	CAFile string

	hold    int
	held    chan struct{} // closed once `hold` requests are waiting
	release chan struct{} // closed to let the held requests answer
	relOnce sync.Once

	mu      sync.Mutex
	count   map[string]int
	blocked []string
}

func newBlockingReceiver(t *testing.T, hold int) *blockingReceiver {
	t.Helper()
	r := &blockingReceiver{
		hold:    hold,
		held:    make(chan struct{}),
		release: make(chan struct{}),
		count:   map[string]int{},
	}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.StartTLS()
	// Close waits for running handlers: release the held ones first.
	t.Cleanup(r.srv.Close)
	t.Cleanup(r.Release)
	r.CAFile = filepath.Join(t.TempDir(), "receiver-ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	require.NoError(t, os.WriteFile(r.CAFile, pemBytes, 0o600))
	return r
}

func (r *blockingReceiver) serve(w http.ResponseWriter, req *http.Request) {
	_, _ = io.Copy(io.Discard, req.Body)
	id := req.Header.Get("Sundial-Id")
	r.mu.Lock()
	r.count[id]++
	block := len(r.blocked) < r.hold
	if block {
		r.blocked = append(r.blocked, id)
		if len(r.blocked) == r.hold {
			close(r.held)
		}
	}
	r.mu.Unlock()
	if block {
		<-r.release
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, `{"ok":true}`)
}

// Release lets the held requests answer (to a caller that may be gone).
func (r *blockingReceiver) Release() { r.relOnce.Do(func() { close(r.release) }) }

// Domain is the receiver's host:port, the project's domain.
func (r *blockingReceiver) Domain() string { return r.srv.Listener.Addr().String() }

// Counts returns how many times each hook id arrived.
func (r *blockingReceiver) Counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.count))
	for id, n := range r.count {
		out[id] = n
	}
	return out
}

// Blocked returns the ids of the held requests.
func (r *blockingReceiver) Blocked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.blocked...)
}
