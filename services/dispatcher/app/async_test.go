package app_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/asyncurl"
	"github.com/sundial-run/sundial/services/dispatcher/app"
	"github.com/sundial-run/sundial/services/dispatcher/internal/credential"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/testkit/logtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// TestAppSendsVerifiableAsyncURLsAndNeverLogsThem: the dispatcher builds the
// ack and nack URLs on SUNDIAL_PUBLIC_URL with the project's secret from
// the database, and neither the secret nor a token (the URLs' only
// credential) appears in its logs, even at debug level.
func TestAppSendsVerifiableAsyncURLsAndNeverLogsThem(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	b.cfg.PublicURL = "https://sundial.example.com"
	var logs logtest.Buffer
	a, err := app.New(context.Background(), b.cfg, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	projectID := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "whsec_app"})
	due := fixture.DueHook(projectID, b.receiver.URL+"/hooks/app", "/hooks/app")
	publishDue(t, b.js, due)
	req := b.receiver.WaitFor(t, 1)[0]
	waitForResult(t, b.js)
	cancel()
	require.NoError(t, <-done)

	creds, err := credential.NewStore(b.pool, secrettest.Keyring()).Get(context.Background(), projectID)
	require.NoError(t, err)
	hookID := uuid.MustParse(due.GetHookId())
	token := asyncurl.Token(creds.AsyncSecret, hookID, due.GetLeaseSeq())
	wantAck, wantNack := asyncurl.URLs("https://sundial.example.com", creds.AsyncSecret, hookID, due.GetLeaseSeq())
	require.Equal(t, wantAck, req.Header.Get("Sundial-Ack-URL"))
	require.Equal(t, wantNack, req.Header.Get("Sundial-Nack-URL"))
	require.True(t, strings.HasPrefix(wantAck, "https://sundial.example.com/v1/async/"+due.GetHookId()+"/7/"+token+"/"))

	out := logs.String()
	require.Contains(t, out, `"msg":"delivery"`, "the delivery was logged")
	for _, secret := range []string{
		token, hex.EncodeToString(creds.AsyncSecret), base64.StdEncoding.EncodeToString(creds.AsyncSecret),
		base64.RawURLEncoding.EncodeToString(creds.AsyncSecret), "whsec_app",
	} {
		require.NotContains(t, out, secret)
	}
}
