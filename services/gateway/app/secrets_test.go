package app_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/testkit/logtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// A gateway that starts re-seals with the first key what was sealed with
// another, without an operator's command: after a key is added.
func TestAGatewayStartingResealsOldKeySecrets(t *testing.T) {
	t.Parallel()
	b := setup(t)

	raw := make([]byte, secretbox.KeyBytes)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	cfg := testConfig(t, b.dbURL)
	cfg.SecretKeys = "new:" + base64.StdEncoding.EncodeToString(raw) + "," + secrettest.Keys
	logs := &logtest.Buffer{}
	a, err := app.New(t.Context(), cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	require.Eventually(t, func() bool {
		sealed, err := b.tq.SealedSecretsForTest(b.ctx)
		require.NoError(t, err)
		for _, v := range sealed {
			if id, err := secretbox.KeyID(v); err != nil || id != "new" {
				return false
			}
		}
		return len(sealed) == 2 // the signing key, the async secret
	}, 10*time.Second, 20*time.Millisecond, "every secret sealed with the first key")
	// One line says what the pass did (written once its last row is).
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), `"msg":"secrets resealed","sealed":2,`)
	}, 5*time.Second, 10*time.Millisecond, "%s", logs)
	require.NotContains(t, logs.String(), b.creds.SigningKey)
}
