package receiver

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// StartT is Start for a test: it fails the test on error and, when the test
// ends, shuts the receiver down, waiting for the requests in progress as
// httptest does (cleanups registered later run first: release held
// requests there).
func StartT(t testing.TB, handler http.Handler, opts Options) *Receiver {
	t.Helper()
	r, err := Start(handler, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.Shutdown(ctx); err != nil {
			_ = r.Close()
		}
	})
	return r
}

// CAFile writes CAPEM to a file in t's temporary folder and returns its
// path: trusting it is what SUNDIAL_DELIVERY_CA_FILE is for.
func CAFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "receiver-ca.pem")
	if err := WriteCAFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}
