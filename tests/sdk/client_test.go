package sdk

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sundial "github.com/sundial-run/sundial/sdk"
)

// requireAPIError asserts err is an *APIError with the status and code.
func requireAPIError(t *testing.T, err error, status int, code string) *sundial.APIError {
	t.Helper()
	var apiErr *sundial.APIError
	require.True(t, errors.As(err, &apiErr), "want an *APIError, got %v", err)
	require.Equal(t, status, apiErr.StatusCode, apiErr.Error())
	require.Equal(t, code, apiErr.Code, apiErr.Error())
	require.NotEmpty(t, apiErr.RequestID)
	return apiErr
}

func TestHooksThroughTheSDK(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ctx := b.ctx
	hooks := b.client.Hooks

	at := time.Date(2035, 3, 4, 5, 6, 7, 0, time.FixedZone("", 2*3600))
	h, err := hooks.Schedule(ctx, sundial.ScheduleHookRequest{Path: "/orders?shop=1", Data: map[string]any{"order": 42}, PostAt: at})
	require.NoError(t, err)
	require.True(t, h.PostAt.Equal(at))
	require.Equal(t, sundial.StatusPending, h.Status)
	require.JSONEq(t, `{"order": 42}`, string(h.Data))
	require.Equal(t, b.receiver.Addr(), h.Domain)

	got, err := hooks.Get(ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, h.ID, got.ID)
	require.Equal(t, "/orders?shop=1", got.Path)

	// 09:00 in Paris on a winter day is 08:00 UTC.
	local, err := hooks.Schedule(ctx, sundial.ScheduleHookRequest{Path: "/r", Data: map[string]any{},
		PostAtLocal: sundial.LocalTime(time.Date(2035, 12, 1, 9, 0, 0, 0, time.UTC)), Timezone: "Europe/Paris"})
	require.NoError(t, err)
	require.True(t, local.PostAt.Equal(time.Date(2035, 12, 1, 8, 0, 0, 0, time.UTC)), local.PostAt.String())
	require.Equal(t, []string{"2035-12-01T09:00:00", "Europe/Paris"}, []string{local.PostAtLocal, local.Timezone})
	require.Regexp(t, `^\d{4}[a-z]$`, local.TZData, "the tz database release that resolved it")

	before := time.Now()
	delayed, err := hooks.Schedule(ctx, sundial.ScheduleHookRequest{Path: "/d", Data: map[string]any{},
		PostIn: sundial.Delay(48 * time.Hour), IdempotencyKey: "delay-1",
		RetryOverride: &sundial.RetryOverride{MinRetries: 3, DelaySecs: 10, Strategy: sundial.StrategyFixed}})
	require.NoError(t, err)
	require.WithinDuration(t, before.Add(48*time.Hour), delayed.PostAt, time.Minute)
	require.NotNil(t, delayed.RetryOverride)
	require.Equal(t, 3, delayed.RetryOverride.MinRetries)
	again, err := hooks.Schedule(ctx, sundial.ScheduleHookRequest{Path: "/d", Data: map[string]any{},
		PostIn: sundial.Delay(48 * time.Hour), IdempotencyKey: "delay-1",
		RetryOverride: &sundial.RetryOverride{MinRetries: 3, DelaySecs: 10, Strategy: sundial.StrategyFixed}})
	require.NoError(t, err)
	require.Equal(t, delayed.ID, again.ID, "the same Idempotency-Key gives the first hook")

	fourth, err := hooks.Schedule(ctx, sundial.ScheduleHookRequest{Path: "/x", Data: map[string]any{}, PostAt: at.Add(time.Hour)})
	require.NoError(t, err)

	// Pages of 2: the iterator follows the cursor over all four.
	seen := map[string]bool{}
	for hk, err := range hooks.All(ctx, sundial.ListHooksParams{Limit: 2, SortBy: "postAt", SortOrder: "asc"}) {
		require.NoError(t, err)
		require.False(t, seen[hk.ID], "hook %s seen twice", hk.ID)
		seen[hk.ID] = true
	}
	require.Equal(t, map[string]bool{h.ID: true, local.ID: true, delayed.ID: true, fourth.ID: true}, seen)
	page, err := hooks.List(ctx, sundial.ListHooksParams{Limit: 1, Status: sundial.StatusPending})
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	require.EqualValues(t, 4, page.Meta.TotalItems)
	require.NotEmpty(t, page.Meta.NextCursor)

	attempts, err := hooks.Attempts(ctx, h.ID)
	require.NoError(t, err)
	require.Empty(t, attempts)

	require.NoError(t, hooks.Delete(ctx, h.ID))
	_, err = hooks.Get(ctx, h.ID)
	_ = requireAPIError(t, err, http.StatusNotFound, sundial.CodeNotFound)

	// Cancel what is due in 2035 (local and fourth; delayed is due sooner).
	res, err := hooks.BulkCancel(ctx, sundial.BulkActionRequest{
		StartTime: time.Date(2035, 1, 1, 0, 0, 0, 0, time.UTC), EndTime: time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC), Limit: 10})
	require.NoError(t, err)
	if delayed.PostAt.Year() == 2035 {
		t.Fatalf("the clock says %s: the test's dates need moving", delayed.PostAt)
	}
	require.Equal(t, 2, res.Affected)

	// Nothing failed or completed: retries and replays skip the pending hook.
	res, err = hooks.BulkRetry(ctx, sundial.BulkActionRequest{HookIDs: []string{delayed.ID}})
	require.NoError(t, err)
	require.Zero(t, res.Affected)
	res, err = hooks.BulkReplay(ctx, sundial.BulkActionRequest{HookIDs: []string{delayed.ID}})
	require.NoError(t, err)
	require.Zero(t, res.Affected)
	res, err = hooks.RetryIDs(ctx, sundial.RetryIDsRequest{ProjectID: b.creds.ProjectID, HookIDs: []string{delayed.ID}})
	require.NoError(t, err)
	require.Zero(t, res.Affected)
}

func TestScheduleBatchThroughTheSDK(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ctx := b.ctx
	req := sundial.ScheduleHooksRequest{IdempotencyKey: "batch-1", Hooks: []sundial.ScheduleHookRequest{
		{Path: "/a", Data: map[string]any{"n": 1}, PostIn: sundial.Delay(time.Hour)},
		{Path: "/b", Data: map[string]any{}, PostAtLocal: sundial.LocalTime(time.Date(2035, 12, 1, 9, 0, 0, 0, time.UTC)), Timezone: "Europe/Paris"},
	}}
	hooks, err := b.client.Hooks.ScheduleBatch(ctx, req)
	require.NoError(t, err)
	require.Len(t, hooks, 2)
	require.Equal(t, "/a", hooks[0].Path)
	require.Equal(t, "/b", hooks[1].Path)
	require.True(t, hooks[1].PostAt.Equal(time.Date(2035, 12, 1, 8, 0, 0, 0, time.UTC)))
	again, err := b.client.Hooks.ScheduleBatch(ctx, req)
	require.NoError(t, err)
	require.Equal(t, []string{hooks[0].ID, hooks[1].ID}, []string{again[0].ID, again[1].ID}, "the same Idempotency-Key gives the first hooks")

	req.Hooks[1].PostIn, req.IdempotencyKey = "soon", ""
	_, err = b.client.Hooks.ScheduleBatch(ctx, req)
	apiErr := requireAPIError(t, err, http.StatusBadRequest, sundial.CodeInvalidRequest)
	require.ElementsMatch(t, []string{"hooks[1].postAtLocal", "hooks[1].postIn"}, apiErr.Fields())
}

func TestBadInputNamesTheField(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ctx := b.ctx
	for field, req := range map[string]sundial.ScheduleHookRequest{
		"path":                     {Path: "no-slash", Data: map[string]any{}, PostIn: "1s"},
		"postIn":                   {Path: "/x", Data: map[string]any{}, PostIn: "soon"},
		"timezone":                 {Path: "/x", Data: map[string]any{}, PostAtLocal: "2035-01-01T09:00:00", Timezone: "Mars/Olympus"},
		"retryOverride.minRetries": {Path: "/x", Data: map[string]any{}, PostIn: "1s", RetryOverride: &sundial.RetryOverride{MinRetries: 99, DelaySecs: 10, Strategy: "fixed"}},
	} {
		_, err := b.client.Hooks.Schedule(ctx, req)
		apiErr := requireAPIError(t, err, http.StatusBadRequest, sundial.CodeInvalidRequest)
		_, ok := apiErr.Field(field)
		require.True(t, ok, "%s: the error names %v", field, apiErr.Fields())
	}
	_, err := b.client.Hooks.RetryIDs(ctx, sundial.RetryIDsRequest{ProjectID: "0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f", HookIDs: []string{"0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f"}})
	_ = requireAPIError(t, err, http.StatusForbidden, sundial.CodeForbidden)

	bad := sundial.NewClient("sdk_nope", sundial.WithBaseURL(b.baseURL))
	_, err = bad.Project.Get(ctx)
	_ = requireAPIError(t, err, http.StatusUnauthorized, sundial.CodeUnauthorized)
}

func TestProjectAndKeysThroughTheSDK(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ctx := b.ctx

	p, err := b.client.Project.Get(ctx)
	require.NoError(t, err)
	require.Equal(t, b.creds.ProjectID, p.ID)
	require.Equal(t, sundial.SchemeSundial, p.SignatureScheme)
	require.Nil(t, p.MaxConcurrency)

	ticket, err := b.client.Project.ListenerTicket(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, ticket.Ticket)
	require.True(t, strings.HasSuffix(ticket.URL, "/v1/ws"), ticket.URL)
	require.WithinDuration(t, time.Now().Add(time.Minute), ticket.ExpiresAt, 10*time.Second)

	p, err = b.client.Project.Update(ctx, sundial.ProjectPatch{
		Name:                sundial.Ptr("Renamed"),
		AuthorizationHeader: sundial.SetTo("Bearer xyz"),
		MaxConcurrency:      sundial.SetTo(8),
		RetryPolicy:         &sundial.ProjectRetryPolicyPatch{MinRetries: sundial.Ptr(2)},
	})
	require.NoError(t, err)
	require.Equal(t, "Renamed", p.Name)
	require.True(t, p.AuthorizationHeaderSet)
	require.NotNil(t, p.MaxConcurrency)
	require.Equal(t, 8, *p.MaxConcurrency)
	require.Equal(t, 2, p.RetryPolicy.MinRetries)
	p, err = b.client.Project.Update(ctx, sundial.ProjectPatch{AuthorizationHeader: sundial.SetNull[string](), MaxConcurrency: sundial.SetNull[int]()})
	require.NoError(t, err)
	require.False(t, p.AuthorizationHeaderSet)
	require.Nil(t, p.MaxConcurrency)
	_, err = b.client.Project.Update(ctx, sundial.ProjectPatch{SignatureScheme: sundial.Ptr("rot13")})
	apiErr := requireAPIError(t, err, http.StatusBadRequest, sundial.CodeInvalidRequest)
	require.Contains(t, apiErr.Fields(), "signatureScheme")
	require.Equal(t, 30, p.RetentionDays)
	require.Equal(t, 90, p.Quota.MaxRetentionDays)
	p, err = b.client.Project.Update(ctx, sundial.ProjectPatch{RetentionDays: sundial.Ptr(14)})
	require.NoError(t, err)
	require.Equal(t, 14, p.RetentionDays)
	_, err = b.client.Project.Update(ctx, sundial.ProjectPatch{RetentionDays: sundial.Ptr(91)})
	apiErr = requireAPIError(t, err, http.StatusBadRequest, sundial.CodeInvalidRequest)
	require.Contains(t, apiErr.Fields(), "retentionDays")

	// A new API key works until it is revoked.
	k, err := b.client.APIKeys.Create(ctx, sundial.CreateAPIKeyRequest{Name: "ci"})
	require.NoError(t, err)
	require.NotEmpty(t, k.Key)
	require.Equal(t, "ci", k.Name)
	other := sundial.NewClient(k.Key, sundial.WithBaseURL(b.baseURL))
	_, err = other.Project.Get(ctx)
	require.NoError(t, err)
	require.NoError(t, b.client.APIKeys.Revoke(ctx, k.ID))
	_, err = other.Project.Get(ctx)
	_ = requireAPIError(t, err, http.StatusUnauthorized, sundial.CodeUnauthorized)
	keys, err := b.client.APIKeys.List(ctx)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.False(t, keys[1].RevokedAt.IsZero(), "the revoked key is listed with its revokedAt")

	// Signing keys: the project's one, a rotation, the retiring one revoked.
	sk, err := b.client.SigningKeys.List(ctx)
	require.NoError(t, err)
	require.Len(t, sk, 1)
	require.Equal(t, sundial.SigningKeyActive, sk[0].State)
	require.Equal(t, b.creds.SigningKey, sk[0].Key)
	rotated, err := b.client.SigningKeys.Rotate(ctx, sundial.RotateSigningKeyRequest{GracePeriodSecs: 3600})
	require.NoError(t, err)
	require.Len(t, rotated, 2)
	require.Equal(t, sk[0].ID, rotated[1].ID)
	require.Equal(t, sundial.SigningKeyRetiring, rotated[1].State)
	err = b.client.SigningKeys.Revoke(ctx, rotated[0].ID)
	_ = requireAPIError(t, err, http.StatusConflict, sundial.CodeConflict)
	require.NoError(t, b.client.SigningKeys.Revoke(ctx, rotated[1].ID))
	sk, err = b.client.SigningKeys.List(ctx)
	require.NoError(t, err)
	require.Len(t, sk, 1)
}

func TestEndpointsAndChannelsThroughTheSDK(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ctx := b.ctx

	eps, err := b.client.Endpoints.List(ctx)
	require.NoError(t, err)
	require.Empty(t, eps)
	_, err = b.client.Endpoints.Resume(ctx, b.receiver.Addr())
	_ = requireAPIError(t, err, http.StatusNotFound, sundial.CodeNotFound)

	ch, err := b.client.Channels.Create(ctx, sundial.CreateChannelRequest{
		Name: "pager", Type: sundial.ChannelTypeWebhook, URL: "https://alerts.example.com/sundial",
		Events: []string{sundial.EventHookFailed}})
	require.NoError(t, err)
	require.Equal(t, "https://alerts.example.com/sundial", ch.URL)
	require.True(t, ch.Enabled)
	require.Equal(t, "untested", ch.Health.Status)

	ch, err = b.client.Channels.Update(ctx, ch.ID, sundial.ChannelPatch{Name: sundial.Ptr("pager 2"), Enabled: sundial.Ptr(false)})
	require.NoError(t, err)
	require.Equal(t, "pager 2", ch.Name)
	require.False(t, ch.Enabled)
	got, err := b.client.Channels.Get(ctx, ch.ID)
	require.NoError(t, err)
	require.Equal(t, ch.Name, got.Name)
	list, err := b.client.Channels.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	sends, err := b.client.Channels.Sends(ctx, ch.ID, 10)
	require.NoError(t, err)
	require.Empty(t, sends)

	_, err = b.client.Channels.Create(ctx, sundial.CreateChannelRequest{Name: "mail", Type: sundial.ChannelTypeEmail,
		Email: &sundial.ChannelEmailSettings{Host: "smtp.example.com", Port: 0, TLS: "starttls", From: "a@example.com", To: []string{"b@example.com"}}})
	apiErr := requireAPIError(t, err, http.StatusBadRequest, sundial.CodeInvalidRequest)
	require.NotEmpty(t, apiErr.Fields())

	require.NoError(t, b.client.Channels.Delete(ctx, ch.ID))
	_, err = b.client.Channels.Get(ctx, ch.ID)
	_ = requireAPIError(t, err, http.StatusNotFound, sundial.CodeNotFound)
}
