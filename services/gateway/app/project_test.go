package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/sundial-run/sundial/pkg/failclass"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// projectJSON is the Project resource.
type projectJSON struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Domain      string `json:"domain"`
	RetryPolicy struct {
		MinRetries    int     `json:"minRetries"`
		DelaySecs     int     `json:"delaySecs"`
		Strategy      string  `json:"strategy"`
		BackoffFactor float64 `json:"backoffFactor"`
		MaxDelaySecs  int     `json:"maxDelaySecs"`
		Jitter        bool    `json:"jitter"`
	} `json:"retryPolicy"`
	AsyncTimeoutSecs       int  `json:"asyncTimeoutSecs"`
	AuthorizationHeaderSet bool `json:"authorizationHeaderSet"`
	Quota                  struct {
		Limit            int64 `json:"limit"`
		HardCapPercent   int32 `json:"hardCapPercent"`
		MaxRetentionDays int   `json:"maxRetentionDays"`
	} `json:"quota"`
	Alerts struct {
		GroupWaitSecs   int      `json:"groupWaitSecs"`
		FollowUpMinSecs int      `json:"followUpMinSecs"`
		FollowUpMaxSecs int      `json:"followUpMaxSecs"`
		OwnerEmails     []string `json:"ownerEmails"`
	} `json:"alerts"`
	SignatureScheme   string            `json:"signatureScheme"`
	RetentionDays     int               `json:"retentionDays"`
	FailurePolicy     map[string]string `json:"failurePolicy"`
	OrderingOnFailure string            `json:"orderingOnFailure"`
	CreatedAt         string            `json:"createdAt"`
	UpdatedAt         string            `json:"updatedAt"`
}

func (r response) project(t *testing.T) projectJSON {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	return decodeStrict[struct {
		Data projectJSON `json:"data"`
	}](t, r.body).Data
}

func (b bundle) patchProject(body string, mods ...func(*http.Request)) response {
	b.t.Helper()
	return b.do(http.MethodPatch, "/v1/project", strings.NewReader(body), mods...)
}

func (b bundle) authorizationHeader() *string {
	b.t.Helper()
	id := uuid.MustParse(b.creds.ProjectID)
	sealed, err := b.tq.GetAuthorizationHeaderForTest(b.ctx, id)
	require.NoError(b.t, err)
	if sealed == nil {
		return nil
	}
	plain, err := secrettest.Keyring().OpenString(secretbox.Label(secretbox.ProjectAuthorization, id), *sealed)
	require.NoError(b.t, err)
	return &plain
}

func TestGetProject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.do(http.MethodGet, "/v1/project", nil)
	p := res.project(t)
	for _, h := range []string{"Sundial-HookQuota-Limit", "Sundial-HookQuota-Usage", "Sundial-HookQuota-Remaining",
		"Sundial-HookQuota-Resets-At", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
		require.NotEmpty(t, res.header.Get(h), h)
	}
	require.Equal(t, b.creds.ProjectID, p.ID)
	require.Equal(t, "Acme", p.Name)
	require.Equal(t, "hooks.example.com", p.Domain)
	require.Equal(t, 5, p.RetryPolicy.MinRetries)
	require.Equal(t, 30, p.RetryPolicy.DelaySecs)
	require.Equal(t, "exponential", p.RetryPolicy.Strategy)
	require.InDelta(t, 2.0, p.RetryPolicy.BackoffFactor, 1e-9)
	require.Equal(t, 3600, p.RetryPolicy.MaxDelaySecs)
	require.True(t, p.RetryPolicy.Jitter)
	require.Equal(t, 300, p.AsyncTimeoutSecs)
	require.False(t, p.AuthorizationHeaderSet)
	require.EqualValues(t, 100000, p.Quota.Limit)
	require.EqualValues(t, 200, p.Quota.HardCapPercent)
	require.Equal(t, "continue", p.OrderingOnFailure, "a key moves on past a failed hook by default")
	require.True(t, strings.HasSuffix(p.CreatedAt, "Z"), p.CreatedAt)
}

func TestPatchProjectChangesOnlyWhatIsGiven(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.do(http.MethodGet, "/v1/project", nil).project(t)

	p := b.patchProject(`{"name":"Acme Billing","domain":"API.example.com:8443","asyncTimeoutSecs":900,
		"retryPolicy":{"minRetries":2,"strategy":"fixed"},"authorizationHeader":"Bearer s3cret-value"}`).project(t)
	require.Equal(t, "Acme Billing", p.Name)
	require.Equal(t, "api.example.com:8443", p.Domain)
	require.Equal(t, 900, p.AsyncTimeoutSecs)
	require.Equal(t, 2, p.RetryPolicy.MinRetries)
	require.Equal(t, "fixed", p.RetryPolicy.Strategy)
	require.Equal(t, 30, p.RetryPolicy.DelaySecs, "retry fields left out stay")
	require.True(t, p.RetryPolicy.Jitter)
	require.True(t, p.AuthorizationHeaderSet)
	require.Equal(t, before.CreatedAt, p.CreatedAt)
	require.NotEqual(t, before.UpdatedAt, p.UpdatedAt)
	require.Equal(t, "Bearer s3cret-value", *b.authorizationHeader())

	got := b.do(http.MethodGet, "/v1/project", nil)
	require.Equal(t, p, got.project(t))
	require.NotContains(t, string(got.body), "s3cret", "the header value is write-only")

	// Absent: unchanged. Null: cleared.
	p = b.patchProject(`{"retryPolicy":{"jitter":false}}`).project(t)
	require.True(t, p.AuthorizationHeaderSet)
	require.Equal(t, "fixed", p.RetryPolicy.Strategy)
	require.False(t, p.RetryPolicy.Jitter)
	p = b.patchProject(`{"authorizationHeader":null}`).project(t)
	require.False(t, p.AuthorizationHeaderSet)
	require.Nil(t, b.authorizationHeader())
	require.NotContains(t, b.logs.String(), "s3cret", "nor logged")
}

func TestPatchProjectRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name, body string
		status     int
		code       string
		fields     []string
	}{
		{"unknown field", `{"colour":"red"}`, 400, "invalid_request", []string{"colour"}},
		{"wrong case", `{"Name":"x"}`, 400, "invalid_request", []string{"Name"}},
		{"duplicate", `{"name":"a","name":"b"}`, 400, "invalid_request", []string{"name"}},
		{"nested unknown", `{"retryPolicy":{"retries":1}}`, 400, "invalid_request", []string{"retryPolicy.retries"}},
		{"trailing data", `{} {}`, 400, "invalid_request", nil},
		{"read-only quota", `{"quota":{"limit":1,"hardCapPercent":100}}`, 400, "invalid_request", []string{"quota"}},
		{"read-only id", `{"id":"` + b.creds.ProjectID + `"}`, 400, "invalid_request", []string{"id"}},
		{"name null", `{"name":null}`, 400, "invalid_request", []string{"name"}},
		{"retryPolicy null", `{"retryPolicy":null}`, 400, "invalid_request", []string{"retryPolicy"}},
		{"bad domain", `{"domain":"https://example.com/x"}`, 400, "invalid_request", []string{"domain"}},
		{"bounds", `{"retryPolicy":{"minRetries":16,"delaySecs":4,"backoffFactor":4.5,"maxDelaySecs":59},"asyncTimeoutSecs":0}`,
			400, "invalid_request", []string{"retryPolicy.minRetries", "retryPolicy.delaySecs", "retryPolicy.backoffFactor", "retryPolicy.maxDelaySecs", "asyncTimeoutSecs"}},
		{"max delay below delay", `{"retryPolicy":{"delaySecs":600,"maxDelaySecs":300}}`, 400, "invalid_request", []string{"retryPolicy.maxDelaySecs"}},
		{"header with CR LF", `{"authorizationHeader":"Bearer x\r\nX-Evil: 1"}`, 400, "invalid_request", []string{"authorizationHeader"}},
		{"header empty", `{"authorizationHeader":""}`, 400, "invalid_request", []string{"authorizationHeader"}},
		{"wrong type", `{"asyncTimeoutSecs":"60"}`, 400, "invalid_request", []string{"asyncTimeoutSecs"}},
		{"failure policy: unknown action", `{"failurePolicy":{"410":"drop"}}`, 400, "invalid_request", []string{"failurePolicy.410"}},
		{"failure policy: unknown class", `{"failurePolicy":{"418":"fail"}}`, 400, "invalid_request", []string{"failurePolicy.418"}},
		{"failure policy: pause where it says nothing of the endpoint", `{"failurePolicy":{"listener":"pause","4xx":"fail","lost":"pause"}}`,
			400, "invalid_request", []string{"failurePolicy.listener", "failurePolicy.lost"}},
		{"failure policy: an empty action", `{"failurePolicy":{"5xx":""}}`, 400, "invalid_request", []string{"failurePolicy.5xx"}},
		{"failure policy: not an object", `{"failurePolicy":["410"]}`, 400, "invalid_request", []string{"failurePolicy"}},
		{"ordering on failure: unknown", `{"orderingOnFailure":"pause"}`, 400, "invalid_request", []string{"orderingOnFailure"}},
		{"ordering on failure: another case", `{"orderingOnFailure":"Hold"}`, 400, "invalid_request", []string{"orderingOnFailure"}},
		{"ordering on failure: null", `{"orderingOnFailure":null}`, 400, "invalid_request", []string{"orderingOnFailure"}},
	}
	before := b.do(http.MethodGet, "/v1/project", nil).project(t)
	t.Run("each", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				b.in(t).patchProject(tt.body).requireError(t, tt.status, tt.code, tt.fields...)
			})
		}
		t.Run("not JSON", func(t *testing.T) {
			t.Parallel()
			b.in(t).patchProject(`name=x`, header("Content-Type", "application/x-www-form-urlencoded")).
				requireError(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
		})
	})
	require.Equal(t, before, b.do(http.MethodGet, "/v1/project", nil).project(t), "nothing changed")
}

// in is the bundle for a subtest: failures are reported on t.
func (b bundle) in(t *testing.T) bundle {
	b.t = t
	return b
}

func TestPatchProjectWithAnEmptyObjectChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.do(http.MethodGet, "/v1/project", nil).project(t)
	require.Equal(t, before, b.patchProject(`{}`).project(t))
}

// TestFailurePolicyRetriesEveryClassUntilChanged: a project shows every
// failure class with its action, retry (what every failure did before
// there were policies) until it changes one; a change names only the
// classes it changes, a class set to null or retry goes back to the
// default, and null resets them all.
func TestFailurePolicyRetriesEveryClassUntilChanged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.do(http.MethodGet, "/v1/project", nil).project(t)
	require.Len(t, p.FailurePolicy, len(failclass.Words()))
	for class, action := range p.FailurePolicy {
		require.Equal(t, "retry", action, class)
	}

	p = b.patchProject(`{"failurePolicy":{"410":"pause","4xx":"fail"}}`).project(t)
	require.Equal(t, "pause", p.FailurePolicy["410"])
	require.Equal(t, "fail", p.FailurePolicy["4xx"])
	require.Equal(t, "retry", p.FailurePolicy["5xx"])
	require.Equal(t, p, b.do(http.MethodGet, "/v1/project", nil).project(t), "stored")

	p = b.patchProject(`{"failurePolicy":{"4xx":null,"timeout":"fail"}}`).project(t)
	require.Equal(t, "pause", p.FailurePolicy["410"], "a class left out keeps its action")
	require.Equal(t, "retry", p.FailurePolicy["4xx"])
	require.Equal(t, "fail", p.FailurePolicy["timeout"])

	p = b.patchProject(`{"failurePolicy":null}`).project(t)
	for class, action := range p.FailurePolicy {
		require.Equal(t, "retry", action, class)
	}
}
