package listen

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A key revoked while it listens: the gateway closes the socket with 4003
// and `sundial listen` exits non-zero, saying what to do.
func TestRevokedKeyStopsTheListener(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	resp, raw := b.api().Do(t, http.MethodPost, "/v1/api-keys", map[string]any{"name": "laptop"})
	require.Equal(t, http.StatusCreated, resp.StatusCode, "POST /v1/api-keys: %s", raw)
	var created struct {
		Data struct {
			ID  string `json:"id"`
			Key string `json:"key"`
		}
	}
	require.NoError(t, json.Unmarshal(raw, &created))
	l := b.listenWith(t, created.Data.Key, b.local.URL())

	resp, raw = b.api().Do(t, http.MethodDelete, "/v1/api-keys/"+created.Data.ID, nil)
	require.Less(t, resp.StatusCode, 300, "DELETE /v1/api-keys: %s", raw)
	select {
	case <-l.Done():
	case <-time.After(90 * time.Second):
		t.Fatalf("the listener still runs after its key was revoked:\n%s", l.Output.String())
	}
	require.NotZero(t, l.ExitCode(), "exit code; output:\n%s", l.Output.String())
	require.Contains(t, l.Output.String(), "login", "the message says what to do")
}
