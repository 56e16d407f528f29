package openapiclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/openapi/contract"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
	"github.com/sundial-run/sundial/tests/internal/inproc"
	"github.com/sundial-run/sundial/tests/openapiclient/gen"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// bundle is a gateway for one project, and the generated client of it.
type bundle struct {
	ctx     context.Context
	baseURL string
	client  *gen.ClientWithResponses
}

// setup boots a gateway on a fresh database and NATS server, with a project,
// and the generated client of it, every exchange checked against the
// document. No scheduler runs: the hooks stay pending.
func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	dbURL := pgtest.NewDB(t)
	ns := natstest.Start(t, natstest.Options{})
	env := envconf.Map(map[string]string{
		"SUNDIAL_DATABASE_URL":       dbURL,
		"SUNDIAL_SECRET_KEYS":        secrettest.Keys,
		"SUNDIAL_NATS_URL":           ns.ClientURL(),
		"SUNDIAL_GATEWAY_ADMIN_ADDR": "127.0.0.1:0",
		"SUNDIAL_HTTP_ADDR":          "127.0.0.1:0",
		"SUNDIAL_SHUTDOWN_TIMEOUT":   "5s",
		"SUNDIAL_LOG_LEVEL":          "warn",
		// Small pools: suites share one PostgreSQL.
		"SUNDIAL_DATABASE_MAX_CONNS": "6",
	})
	creds, err := gateway.CreateProject(ctx, gateway.Database{URL: dbURL, SecretKeys: secrettest.Keys}, "openapiclient", "receiver.example")
	require.NoError(t, err)
	cfg, err := gateway.ConfigFromEnv(env)
	require.NoError(t, err)
	a, err := gateway.New(ctx, cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	require.NoError(t, err)
	var services inproc.Group
	t.Cleanup(services.Stop)
	services.Go(ctx, t, "gateway", a.Run)

	b := &bundle{ctx: ctx, baseURL: "http://" + a.Addr()}
	b.client, err = gen.NewClientWithResponses(b.baseURL+"/v1",
		gen.WithHTTPClient(contract.Client(t)),
		gen.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("X-API-Key", creds.APIKey)
			return nil
		}))
	require.NoError(t, err)
	return b
}

// TestGeneratedFromTheServedDocument: gen was generated from the document
// this gateway serves, not from an older one (make generate-openapi records
// the digest of the one it read).
func TestGeneratedFromTheServedDocument(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := http.Get(b.baseURL + "/v1/openapi.json")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	served, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	generatedFrom, err := os.ReadFile(filepath.Join("gen", "openapi.json.sha256"))
	require.NoError(t, err)
	digest := sha256.Sum256(served)
	require.Equal(t, strings.TrimSpace(string(generatedFrom)), hex.EncodeToString(digest[:]),
		"tests/openapiclient/gen was generated from another document: run make generate-openapi")
}

// TestRoundTrip schedules, reads, lists and cancels a hook, and reads a
// refusal, through the generated client and types alone.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	data := map[string]any{"order": float64(42), "lines": []any{map[string]any{"sku": "A-1", "qty": float64(2)}}}

	before := time.Now()
	created, err := b.client.CreateHookWithResponse(b.ctx, &gen.CreateHookParams{IdempotencyKey: ptr("order-42")},
		gen.ScheduleHookRequest{Path: "/orders?shop=7", Data: data, PostIn: ptr("1h")})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, created.StatusCode(), string(created.Body))
	require.NotNil(t, created.JSON201)
	hook := created.JSON201.Data
	require.Equal(t, "/orders?shop=7", hook.Path)
	require.Equal(t, "receiver.example", hook.Domain)
	require.Equal(t, data, hook.Data, "free-form data keeps every member")
	require.Equal(t, gen.HookStatusPending, hook.Status)
	require.WithinRange(t, hook.PostAt, before.Add(time.Hour-time.Second), time.Now().Add(time.Hour+time.Second))

	got, err := b.client.GetHookWithResponse(b.ctx, hook.Id.String())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, got.StatusCode(), string(got.Body))
	require.Equal(t, hook, got.JSON200.Data)

	listed, err := b.client.ListHooksWithResponse(b.ctx, &gen.ListHooksParams{Status: ptr(gen.HookStatusPending)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, listed.StatusCode(), string(listed.Body))
	require.Equal(t, []gen.Hook{hook}, listed.JSON200.Data)
	require.Equal(t, int64(1), listed.JSON200.Meta.TotalItems)

	deleted, err := b.client.DeleteHookWithResponse(b.ctx, hook.Id.String())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, deleted.StatusCode(), string(deleted.Body))
	require.NotNil(t, deleted.JSON200)

	gone, err := b.client.GetHookWithResponse(b.ctx, hook.Id.String())
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, gone.StatusCode(), string(gone.Body))
	require.Equal(t, gen.ErrorCodeNotFound, gone.JSON404.Code)

	refused, err := b.client.CreateHookWithResponse(b.ctx, nil,
		gen.ScheduleHookRequest{Path: "/orders", Data: data, PostIn: ptr("soon")})
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, refused.StatusCode(), string(refused.Body))
	require.Equal(t, gen.ErrorCodeInvalidRequest, refused.JSON400.Code)
	require.NotNil(t, refused.JSON400.Details)
	require.Equal(t, "postIn", (*refused.JSON400.Details)[0].Field)
	require.Equal(t, refused.HTTPResponse.Header.Get("X-Request-Id"), refused.JSON400.RequestId.String())
}

func ptr[T any](v T) *T { return &v }
