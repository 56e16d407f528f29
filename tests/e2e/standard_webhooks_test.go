package e2e

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/internal/webhookverify"
)

// signingKey is the API's SigningKey, as far as these tests look at it.
type signingKey struct {
	Key            string `json:"key"`
	State          string `json:"state"`
	StandardSecret string `json:"standardSecret"`
}

func (b *bundle) signingKeys(t *testing.T) []signingKey {
	t.Helper()
	resp, raw := b.do(t, http.MethodGet, "/v1/signing-keys", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var out struct{ Data []signingKey }
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Data
}

// TestSignatureSchemes delivers a hook under each signatureScheme, during a
// key rotation (two keys sign), and verifies it as a receiver would: the
// Standard Webhooks headers with webhookverify, written from that
// specification and checked against its published vectors, given each
// key's standardSecret from the API; Sundial's headers with hmacHex.
func TestSignatureSchemes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scheme            string
		sundial, standard bool
	}{
		{"sundial", true, false},
		{"standard", false, true},
		{"both", true, true},
	} {
		t.Run(tc.scheme, func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{})
			// Set before the first delivery, so that the dispatcher's key
			// cache never held the project's previous settings.
			resp, raw := b.do(t, http.MethodPatch, "/v1/project", map[string]any{"signatureScheme": tc.scheme})
			require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
			resp, raw = b.do(t, http.MethodPost, "/v1/signing-keys/rotate", nil)
			require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
			keys := b.signingKeys(t)
			require.Len(t, keys, 2, "the new active key and the retiring one")

			created := b.schedule(t, map[string]any{"path": "/webhooks/std", "postIn": "1s", "data": map[string]any{"n": 1}})
			b.waitStatus(t, created.ID, "completed", 20*time.Second)
			got := b.receiver.Received()
			require.Len(t, got, 1)
			r := got[0]

			if tc.standard {
				require.Equal(t, created.ID, r.Header.Get("webhook-id"), "the hook id, the same on every attempt")
				require.Len(t, strings.Fields(r.Header.Get("webhook-signature")), 2, "one signature per key")
				for _, k := range keys {
					require.NoError(t, webhookverify.Verify(k.StandardSecret, r.Header, r.Body, time.Now(), webhookverify.Tolerance),
						"%s key", k.State)
				}
				wrong := keys[0].StandardSecret[:len(keys[0].StandardSecret)-4] + "AAA="
				require.Error(t, webhookverify.Verify(wrong, r.Header, r.Body, time.Now(), webhookverify.Tolerance))
			} else {
				for _, h := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
					require.Empty(t, r.Header.Get(h), h)
				}
			}

			if tc.sundial {
				require.Equal(t, created.ID, r.Header.Get("Sundial-Id"))
				ts := r.Header.Get("Sundial-Timestamp")
				_, err := strconv.ParseInt(ts, 10, 64)
				require.NoError(t, err)
				want := make([]string, len(keys))
				for i, k := range keys {
					want[i] = "v1," + hmacHex(k.Key, []byte(ts+"."+string(r.Body)))
				}
				require.Equal(t, strings.Join(want, " "), r.Header.Get("Sundial-Signature"))
				require.Equal(t, hmacHex(keys[0].Key, r.Body), r.Header.Get("X-Sundial-Signature"))
			} else {
				for _, h := range []string{"Sundial-Id", "Sundial-Timestamp", "Sundial-Signature", "X-Sundial-Signature"} {
					require.Empty(t, r.Header.Get(h), h)
				}
			}
			// The ack and nack URLs come with every scheme.
			require.NotEmpty(t, r.Header.Get("Sundial-Ack-URL"))
		})
	}
}
