package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/gateway/app"
)

// postBatch sends POST /v1/hooks/batch with the hooks given as JSON bodies
// of POST /v1/hooks.
func (b bundle) postBatch(hooks []string, mods ...func(*http.Request)) response {
	b.t.Helper()
	body := `{"hooks":[` + strings.Join(hooks, ",") + `]}`
	return b.do(http.MethodPost, "/v1/hooks/batch", strings.NewReader(body), mods...)
}

func (r response) hooks(t *testing.T) []hookJSON {
	t.Helper()
	return decodeStrict[struct {
		Data []hookJSON `json:"data"`
	}](t, r.body).Data
}

// hookCount is how many hooks the project has in the database.
func (b bundle) hookCount() int64 {
	b.t.Helper()
	n, err := b.tq.CountHooksForTest(b.ctx, uuid.MustParse(b.creds.ProjectID))
	require.NoError(b.t, err)
	return n
}

// same is n copies of one hook's body, each with its index in its data.
func same(n int) []string {
	hooks := make([]string, n)
	for i := range hooks {
		hooks[i] = fmt.Sprintf(`{"path":"/h/%d","data":{"i":%d},"postIn":"1m"}`, i, i)
	}
	return hooks
}

func TestCreateBatchAnswersTheHooksInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.postBatch([]string{
		`{"path":"/in","data":{"a":1},"postIn":"1m"}`,
		`{"path":"/at","data":{},"postAt":"2030-01-02T15:04:05+01:00"}`,
		`{"path":"/local","data":{},"postAtLocal":"2030-12-01T09:00:00","timezone":"Europe/Paris"}`,
		`{"path":"/retry","data":{},"postIn":"1h","retryOverride":{"minRetries":3,"delaySecs":10,"strategy":"fixed"}}`,
	})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	hooks := res.hooks(t)
	require.Len(t, hooks, 4)
	for i, path := range []string{"/in", "/at", "/local", "/retry"} {
		require.Equal(t, path, hooks[i].Path)
		require.Equal(t, "hooks.example.com", hooks[i].Domain)
		stored := b.storedHook(hooks[i].ID)
		require.Equal(t, path, stored.Path, "the hook as stored")
	}
	require.JSONEq(t, `{"a":1}`, string(hooks[0].Data))
	require.Equal(t, "2030-01-02T14:04:05Z", hooks[1].PostAt)
	require.Equal(t, "2030-12-01T08:00:00Z", hooks[2].PostAt)
	require.JSONEq(t, `{"minRetries":3,"delaySecs":10,"strategy":"fixed","backoffFactor":2,"jitter":false}`, string(hooks[3].RetryOverride))
	require.Equal(t, "4", res.header.Get("Sundial-HookQuota-Usage"), "counted together")

	// The answer is the single create's representation of each hook.
	single := b.do(http.MethodGet, "/v1/hooks/"+hooks[0].ID, nil)
	require.Equal(t, http.StatusOK, single.status)
	require.Equal(t, single.hook(t), hooks[0])
}

func TestCreateBatchNamesEveryBadHookByIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	good := `{"path":"/a","data":{},"postIn":"1m"}`
	res := b.postBatch([]string{
		good,
		`{"path":"a","data":{},"postIn":"1m"}`,
		good,
		`{"path":"/a","data":[],"postIn":"0s"}`,
		`{"path":"/a","data":{},"postIn":"1m","retryOverride":{"minRetries":0,"delaySecs":5,"strategy":"fixed"}}`,
	})
	res.requireError(t, http.StatusBadRequest, "invalid_request",
		"hooks[1].path", "hooks[3].data", "hooks[3].postIn", "hooks[4].retryOverride.minRetries")
	require.Zero(t, b.hookCount(), "a batch with a bad hook creates nothing")

	res = b.postBatch([]string{good, `{"path":"/a","data":{},"postIn":"1m","colour":"red"}`})
	e := res.requireError(t, http.StatusBadRequest, "invalid_request", "hooks[1].colour")
	require.Contains(t, e.Details[0].Message, "unknown field")

	b.postBatch(nil).requireError(t, http.StatusBadRequest, "invalid_request", "hooks")
	b.do(http.MethodPost, "/v1/hooks/batch", strings.NewReader(`{}`)).requireError(t, http.StatusBadRequest, "invalid_request", "hooks")
	b.do(http.MethodPost, "/v1/hooks/batch", strings.NewReader(`{"hooks":[],"x":1}`)).requireError(t, http.StatusBadRequest, "invalid_request", "x")
	require.Zero(t, b.hookCount())
}

func TestCreateBatchTakesOneToAThousandHooks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.postBatch(same(1001))
	e := res.requireError(t, http.StatusBadRequest, "invalid_request", "hooks")
	require.Contains(t, e.Details[0].Message, "1 to 1000 hooks, got 1001")
	require.Zero(t, b.hookCount())

	res = b.postBatch(same(1000))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	hooks := res.hooks(t)
	require.Len(t, hooks, 1000)
	for i, h := range hooks {
		require.Equal(t, "/h/"+strconv.Itoa(i), h.Path, "in the request's order")
	}
	require.EqualValues(t, 1000, b.hookCount())
	require.Equal(t, "1000", res.header.Get("Sundial-HookQuota-Usage"))
}

func TestCreateBatchBounds(t *testing.T) {
	t.Parallel()
	const maxData = 1 << 20
	b := setup(t, func(c *app.Config) { c.MaxDataBytes = maxData })
	data := func(n int) string { return `{"s":"` + strings.Repeat("x", n-9) + `"}` }
	hook := func(n int) string { return `{"path":"/a","postIn":"1m","data":` + data(n) + `}` }

	// Two hooks of the largest data: more than a single create's body.
	res := b.postBatch([]string{hook(maxData), hook(maxData)})
	require.Equal(t, http.StatusCreated, res.status)

	res = b.postBatch([]string{hook(10), hook(maxData + 1), hook(10), hook(maxData + 1)})
	res.requireError(t, http.StatusRequestEntityTooLarge, "payload_too_large", "hooks[1].data", "hooks[3].data")

	// 17 hooks of 1 MiB are over the batch's 16 MiB.
	over := make([]string, 17)
	for i := range over {
		over[i] = hook(maxData)
	}
	res = b.postBatch(over)
	e := res.requireError(t, http.StatusRequestEntityTooLarge, "payload_too_large")
	require.Contains(t, e.Error, "16777216 bytes")
	body := `{"hooks":[` + strings.Join(over, ",") + `]}`
	// Without a Content-Length (chunked), the body is cut off at the limit.
	res = b.do(http.MethodPost, "/v1/hooks/batch", struct{ *strings.Reader }{strings.NewReader(body)})
	res.requireError(t, http.StatusRequestEntityTooLarge, "payload_too_large")
	require.EqualValues(t, 2, b.hookCount())
}

// A batch counts against the quota as a whole: one that fits exactly under
// the hard cap is created, one hook more and none is.
func TestCreateBatchQuotaIsAllOrNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	setPlan(b, 10, 100) // hard cap: 10 hooks
	for range 3 {
		require.Equal(t, http.StatusCreated, b.post(limitsHook).status)
	}
	res := b.postBatch(same(8))
	e := res.requireError(t, http.StatusTooManyRequests, "quota_exhausted")
	require.Contains(t, e.Error, "quota")
	require.Equal(t, "3", res.header.Get("Sundial-HookQuota-Usage"), "the refused batch is not counted")
	require.NotEmpty(t, res.header.Get("Retry-After"))
	require.EqualValues(t, 3, b.hookCount(), "the seven hooks that fit were not created either")

	res = b.postBatch(same(7))
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	require.Len(t, res.hooks(t), 7)
	require.Equal(t, "10", res.header.Get("Sundial-HookQuota-Usage"))
	require.Equal(t, "0", res.header.Get("Sundial-HookQuota-Remaining"))
	require.EqualValues(t, 10, b.hookCount())

	b.postBatch(same(1)).requireError(t, http.StatusTooManyRequests, "quota_exhausted")
	require.EqualValues(t, 10, b.hookCount())
}

// A batch whose insert fails at a hook in its middle (PostgreSQL refuses
// hook 500 of 1,000) creates nothing, counts nothing against the quota and
// keeps no Idempotency-Key: the same key then takes a batch that can be
// stored, which would be a 409 had the failed one kept it.
func TestCreateBatchFailingInTheMiddleCreatesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.tq.RefusePathForTest(b.ctx))
	hooks := same(1000)
	hooks[500] = `{"path":"/refused","data":{"i":500},"postIn":"1m"}`
	key := header("Idempotency-Key", "import-9")
	b.postBatch(hooks, key).requireError(t, http.StatusInternalServerError, "internal_error")
	require.Zero(t, b.hookCount(), "none of the 1,000 hooks was created")

	res := b.postBatch(same(1000), key)
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	require.Len(t, res.hooks(t), 1000)
	require.Equal(t, "1000", res.header.Get("Sundial-HookQuota-Usage"), "the failed batch was not counted")
	require.EqualValues(t, 1000, b.hookCount())
}

// A batch that reaches several thresholds at once claims each.
func TestCreateBatchClaimsTheThresholdsItReaches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	setPlan(b, 4, 200) // 75 %: 3 hooks, 100 %: 4, 150 %: 6
	require.Equal(t, http.StatusCreated, b.postBatch(same(4)).status)
	var stored []int32
	for _, row := range b.storedAlerts() {
		var a eventv1.Alert
		require.NoError(t, proto.Unmarshal(row.Body, &a))
		stored = append(stored, a.GetThresholdPercent())
	}
	require.ElementsMatch(t, []int32{75, 100}, stored)
}

func TestCreateBatchIdempotencyKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := header("Idempotency-Key", "import-7")
	first := b.postBatch(same(3), key)
	require.Equal(t, http.StatusCreated, first.status)

	// The same batch, written differently.
	var spaced []string
	for _, h := range same(3) {
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(h), &v))
		out, err := json.MarshalIndent(v, "", "  ")
		require.NoError(t, err)
		spaced = append(spaced, string(out))
	}
	again := b.postBatch(spaced, key)
	require.Equal(t, http.StatusCreated, again.status)
	require.Equal(t, first.hooks(t), again.hooks(t), "the first request's hooks, in order")
	require.Equal(t, "3", again.header.Get("Sundial-HookQuota-Usage"), "counted once")
	require.EqualValues(t, 3, b.hookCount(), "created once")

	b.postBatch(same(2), key).requireError(t, http.StatusConflict, "conflict", "Idempotency-Key")
	reordered := same(3)
	reordered[0], reordered[1] = reordered[1], reordered[0]
	b.postBatch(reordered, key).requireError(t, http.StatusConflict, "conflict", "Idempotency-Key")
	b.post(same(1)[0], key).requireError(t, http.StatusConflict, "conflict", "Idempotency-Key")
	b.postBatch(same(1), header("Idempotency-Key", "caf\u00e9")).requireError(t, http.StatusBadRequest, "invalid_request", "Idempotency-Key")

	// A single create's key is not a batch's.
	single := header("Idempotency-Key", "one")
	require.Equal(t, http.StatusCreated, b.post(same(1)[0], single).status)
	b.postBatch(same(1), single).requireError(t, http.StatusConflict, "conflict", "Idempotency-Key")

	// A repeat after one of its hooks was deleted.
	require.Equal(t, http.StatusOK, b.do(http.MethodDelete, "/v1/hooks/"+first.hooks(t)[1].ID, nil).status)
	b.postBatch(same(3), key).requireError(t, http.StatusConflict, "conflict", "Idempotency-Key")
	require.EqualValues(t, 3, b.hookCount())
}
