package project_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/services/gateway/internal/strictjson"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

type bundle struct {
	ctx      context.Context
	pool     *pgxpool.Pool
	q        *storetest.Queries
	settings *project.Service
	id       uuid.UUID
}

func setup(t *testing.T) bundle {
	t.Helper()
	pool, _ := pgtest.NewPool(t)
	created, err := project.Create(t.Context(), pool, secrettest.Keyring(), "Acme", "hooks.example.com")
	require.NoError(t, err)
	return bundle{ctx: t.Context(), pool: pool, q: storetest.New(pool), settings: project.NewService(pool, secrettest.Keyring()), id: created.ID}
}

func (b bundle) get(t *testing.T) project.Settings {
	t.Helper()
	s, err := b.settings.Get(b.ctx, b.id)
	require.NoError(t, err)
	return s
}

// patch decodes body as PATCH /v1/project does and applies it.
func (b bundle) patch(t *testing.T, body string) (project.Settings, error) {
	t.Helper()
	p, err := project.DecodePatch([]byte(body))
	if err != nil {
		return project.Settings{}, err
	}
	return b.settings.Update(b.ctx, b.id, p)
}

func (b bundle) authorization(t *testing.T) *string {
	t.Helper()
	sealed, err := b.q.GetAuthorizationHeaderForTest(b.ctx, b.id)
	require.NoError(t, err)
	if sealed == nil {
		return nil
	}
	plain, err := secrettest.Keyring().OpenString(secretbox.Label(secretbox.ProjectAuthorization, b.id), *sealed)
	require.NoError(t, err)
	return &plain
}

func TestGetShowsTheDefaults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.get(t)
	require.Equal(t, b.id, s.ID)
	require.Equal(t, "Acme", s.Name)
	require.Equal(t, "hooks.example.com", s.Domain)
	require.Equal(t, project.RetryPolicy{
		MinRetries: 5, DelaySecs: 30, Strategy: "exponential", BackoffFactor: 2.0, MaxDelaySecs: 3600, Jitter: true,
	}, s.RetryPolicy)
	require.Equal(t, 300, s.AsyncTimeoutSecs)
	require.False(t, s.AuthorizationHeaderSet)
	require.Equal(t, project.Quota{Limit: 100000, HardCapPercent: 200, MaxRetentionDays: 90}, s.Quota)
	require.Equal(t, 30, s.RetentionDays)
	require.Equal(t, s.CreatedAt, s.UpdatedAt)

	_, err := b.settings.Get(b.ctx, uuid.New())
	require.ErrorIs(t, err, postgres.ErrNotFound)
	_, err = b.settings.Update(b.ctx, uuid.New(), project.Patch{Name: project.Value("x")})
	require.ErrorIs(t, err, postgres.ErrNotFound)
}

func TestUpdateChangesOnlyTheFieldsGiven(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.get(t)
	s, err := b.patch(t, `{"name":"  Acme Billing ","domain":"API.Example.com:8443","asyncTimeoutSecs":600,
		"retryPolicy":{"minRetries":0,"strategy":"fixed"},"authorizationHeader":"Bearer s3cret"}`)
	require.NoError(t, err)
	require.Equal(t, "Acme Billing", s.Name)
	require.Equal(t, "api.example.com:8443", s.Domain)
	require.Equal(t, 600, s.AsyncTimeoutSecs)
	require.Equal(t, project.RetryPolicy{
		MinRetries: 0, DelaySecs: 30, Strategy: "fixed", BackoffFactor: 2.0, MaxDelaySecs: 3600, Jitter: true,
	}, s.RetryPolicy, "the retry fields not given stay")
	require.True(t, s.AuthorizationHeaderSet)
	require.Equal(t, "Bearer s3cret", *b.authorization(t))
	require.Equal(t, before.Quota, s.Quota)
	require.Equal(t, before.CreatedAt, s.CreatedAt)
	require.True(t, s.UpdatedAt.After(before.UpdatedAt))
	require.Equal(t, s, b.get(t), "stored as returned")

	// Another change leaves the first one's fields alone, the header included.
	s2, err := b.patch(t, `{"retryPolicy":{"jitter":false}}`)
	require.NoError(t, err)
	require.Equal(t, "Acme Billing", s2.Name)
	require.Equal(t, 0, s2.RetryPolicy.MinRetries)
	require.Equal(t, "fixed", s2.RetryPolicy.Strategy)
	require.False(t, s2.RetryPolicy.Jitter)
	require.True(t, s2.AuthorizationHeaderSet)
	require.Equal(t, "Bearer s3cret", *b.authorization(t))
}

func TestAbsentNullAndValueOfTheAuthorizationHeader(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s, err := b.patch(t, `{"authorizationHeader":"Basic dXNlcjpwYXNz"}`)
	require.NoError(t, err)
	require.True(t, s.AuthorizationHeaderSet)

	s, err = b.patch(t, `{"name":"Renamed"}`)
	require.NoError(t, err)
	require.True(t, s.AuthorizationHeaderSet, "absent: unchanged")
	require.Equal(t, "Basic dXNlcjpwYXNz", *b.authorization(t))

	s, err = b.patch(t, `{"authorizationHeader":null}`)
	require.NoError(t, err)
	require.False(t, s.AuthorizationHeaderSet, "null: cleared")
	require.Nil(t, b.authorization(t))

	s, err = b.patch(t, `{"authorizationHeader":null}`)
	require.NoError(t, err)
	require.False(t, s.AuthorizationHeaderSet, "clearing twice is fine")
}

func TestAnEmptyPatchChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.get(t)
	s, err := b.patch(t, `{}`)
	require.NoError(t, err)
	require.Equal(t, before, s)
	require.Equal(t, before, b.get(t), "updatedAt included")
}

func TestUpdateValidatesEveryField(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := strings.Repeat("x", 4097)
	tests := []struct {
		name, body, field, says string
	}{
		{"name empty", `{"name":"  "}`, "name", "must not be empty"},
		{"name too long", `{"name":"` + strings.Repeat("n", 201) + `"}`, "name", "at most 200"},
		{"name too long before trimming", `{"name":"` + strings.Repeat("n", 200) + ` "}`, "name", "at most 200"},
		{"domain too long before trimming", `{"domain":"` + strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61) + ` "}`, "domain", "at most 253"},
		{"name control", `{"name":"a\tb"}`, "name", "control characters"},
		{"name null", `{"name":null}`, "name", "must not be null"},
		{"domain scheme", `{"domain":"https://example.com"}`, "domain", "without a scheme"},
		{"domain path", `{"domain":"example.com/x"}`, "domain", "without a path"},
		{"domain port", `{"domain":"example.com:0"}`, "domain", "1 to 65535"},
		{"domain ipv6", `{"domain":"2001:db8::1"}`, "domain", "brackets"},
		{"domain empty", `{"domain":""}`, "domain", "must not be empty"},
		{"domain null", `{"domain":null}`, "domain", "must not be null"},
		{"retryPolicy null", `{"retryPolicy":null}`, "retryPolicy", "must not be null"},
		{"minRetries low", `{"retryPolicy":{"minRetries":-1}}`, "retryPolicy.minRetries", "from 0 to 15"},
		{"minRetries high", `{"retryPolicy":{"minRetries":16}}`, "retryPolicy.minRetries", "from 0 to 15"},
		{"minRetries null", `{"retryPolicy":{"minRetries":null}}`, "retryPolicy.minRetries", "must not be null"},
		{"delaySecs low", `{"retryPolicy":{"delaySecs":4}}`, "retryPolicy.delaySecs", "from 5 to 3600"},
		{"delaySecs high", `{"retryPolicy":{"delaySecs":3601}}`, "retryPolicy.delaySecs", "from 5 to 3600"},
		{"strategy", `{"retryPolicy":{"strategy":"Exponential"}}`, "retryPolicy.strategy", `"fixed" or "exponential"`},
		{"strategy null", `{"retryPolicy":{"strategy":null}}`, "retryPolicy.strategy", "must not be null"},
		{"backoffFactor low", `{"retryPolicy":{"backoffFactor":1.09}}`, "retryPolicy.backoffFactor", "from 1.1 to 4.0"},
		{"backoffFactor high", `{"retryPolicy":{"backoffFactor":4.01}}`, "retryPolicy.backoffFactor", "from 1.1 to 4.0"},
		{"maxDelaySecs low", `{"retryPolicy":{"maxDelaySecs":59}}`, "retryPolicy.maxDelaySecs", "from 60 to 86400"},
		{"maxDelaySecs high", `{"retryPolicy":{"maxDelaySecs":86401}}`, "retryPolicy.maxDelaySecs", "from 60 to 86400"},
		{"jitter null", `{"retryPolicy":{"jitter":null}}`, "retryPolicy.jitter", "must not be null"},
		{"maxDelay below delay", `{"retryPolicy":{"delaySecs":600,"maxDelaySecs":300}}`, "retryPolicy.maxDelaySecs", "at least retryPolicy.delaySecs (600)"},
		{"delay equal to the stored max", `{"retryPolicy":{"delaySecs":3600}}`, "", ""}, // 3600 <= the stored 3600: fine
		{"asyncTimeoutSecs low", `{"asyncTimeoutSecs":0}`, "asyncTimeoutSecs", "from 1 to 86400"},
		{"asyncTimeoutSecs high", `{"asyncTimeoutSecs":86401}`, "asyncTimeoutSecs", "from 1 to 86400"},
		{"asyncTimeoutSecs null", `{"asyncTimeoutSecs":null}`, "asyncTimeoutSecs", "must not be null"},
		{"maxConcurrency low", `{"maxConcurrency":0}`, "maxConcurrency", "from 1 to 10000"},
		{"maxConcurrency high", `{"maxConcurrency":10001}`, "maxConcurrency", "from 1 to 10000"},
		{"retentionDays low", `{"retentionDays":0}`, "retentionDays", "from 1 to 3650"},
		{"retentionDays over the plan", `{"retentionDays":91}`, "retentionDays", "from 1 to 90, the plan's bound"},
		{"retentionDays over any plan", `{"retentionDays":3651}`, "retentionDays", "from 1 to 3650"},
		{"retentionDays null", `{"retentionDays":null}`, "retentionDays", "must not be null"},
		{"authorization empty", `{"authorizationHeader":""}`, "authorizationHeader", "must not be empty"},
		{"authorization too long", `{"authorizationHeader":"` + long + `"}`, "authorizationHeader", "at most 4096"},
		{"authorization CR LF", `{"authorizationHeader":"Bearer x\r\nX-Evil: 1"}`, "authorizationHeader", "printable ASCII"},
		{"authorization tab", `{"authorizationHeader":"Bearer\tx"}`, "authorizationHeader", "printable ASCII"},
		{"authorization non-ASCII", `{"authorizationHeader":"Bearer é"}`, "authorizationHeader", "printable ASCII"},
		{"authorization spaces", `{"authorizationHeader":" Bearer x"}`, "authorizationHeader", "spaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := b.get(t)
			_, err := b.patch(t, tt.body)
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			requireProblem(t, err, tt.field, tt.says)
			require.Equal(t, before, b.get(t), "nothing changed")
		})
	}
}

func requireProblem(t *testing.T, err error, field, says string) {
	t.Helper()
	require.ErrorIs(t, err, project.ErrInvalid)
	var ise *project.InvalidSettingsError
	require.ErrorAs(t, err, &ise)
	require.Len(t, ise.Problems, 1, err)
	require.Equal(t, field, ise.Problems[0].Field)
	require.Contains(t, ise.Problems[0].Message, says)
}

func TestEveryProblemIsReportedAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.patch(t, `{"name":"","domain":"a/b","retryPolicy":{"minRetries":99,"delaySecs":1},"asyncTimeoutSecs":0}`)
	var ise *project.InvalidSettingsError
	require.ErrorAs(t, err, &ise)
	var fields []string
	for _, p := range ise.Problems {
		fields = append(fields, p.Field)
	}
	require.Equal(t, []string{"name", "domain", "retryPolicy.minRetries", "retryPolicy.delaySecs", "asyncTimeoutSecs"}, fields)
}

func TestAnAuthorizationValueIsNeverRepeatedInAnError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.patch(t, `{"authorizationHeader":"Bearer topsecret\n"}`)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "topsecret")
}

func TestTheDelaysAreCheckedAgainstTheStoredSettings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.patch(t, `{"retryPolicy":{"delaySecs":600}}`)
	require.NoError(t, err)
	_, err = b.patch(t, `{"retryPolicy":{"maxDelaySecs":300}}`)
	requireProblem(t, err, "retryPolicy.maxDelaySecs", "at least retryPolicy.delaySecs (600)")
	_, err = b.patch(t, `{"retryPolicy":{"maxDelaySecs":600}}`)
	require.NoError(t, err)
	_, err = b.patch(t, `{"retryPolicy":{"delaySecs":601}}`)
	requireProblem(t, err, "retryPolicy.delaySecs", "at most retryPolicy.maxDelaySecs (600)")
	s, err := b.patch(t, `{"retryPolicy":{"delaySecs":60,"maxDelaySecs":60,"backoffFactor":1.1}}`)
	require.NoError(t, err)
	require.Equal(t, 60, s.RetryPolicy.DelaySecs)
	require.InDelta(t, 1.1, s.RetryPolicy.BackoffFactor, 1e-9)
}

func TestDecodePatchIsStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, field, says string
	}{
		{"unknown", `{"colour":"red"}`, "colour", "unknown field"},
		{"wrong case", `{"Name":"x"}`, "Name", `did you mean "name"`},
		{"nested unknown", `{"retryPolicy":{"retries":3}}`, "retryPolicy.retries", "unknown field"},
		{"nested wrong case", `{"retryPolicy":{"minretries":3}}`, "retryPolicy.minretries", `did you mean "minRetries"`},
		{"duplicate", `{"name":"a","name":"b"}`, "name", "duplicate"},
		{"trailing", `{"name":"a"} {}`, "", "after the JSON object"},
		{"not an object", `["name"]`, "", "must be a JSON object"},
		{"wrong type", `{"asyncTimeoutSecs":"60"}`, "asyncTimeoutSecs", "an integer"},
		{"fraction", `{"retryPolicy":{"minRetries":1.5}}`, "retryPolicy.minRetries", "an integer"},
		{"retryPolicy not an object", `{"retryPolicy":5}`, "retryPolicy", "an object"},
		{"invalid UTF-8", "{\"name\":\"\xff\"}", "name", "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := project.DecodePatch([]byte(tt.body))
			var se *strictjson.Error
			require.ErrorAs(t, err, &se)
			require.Equal(t, tt.field, se.Field)
			require.Contains(t, se.Message, tt.says)
		})
	}
}

func TestDecodePatchRefusesReadOnlyFields(t *testing.T) {
	t.Parallel()
	_, err := project.DecodePatch([]byte(`{"id":"x","quota":{"limit":1},"authorizationHeaderSet":false,"createdAt":null,"updatedAt":"y"}`))
	var ise *project.InvalidSettingsError
	require.ErrorAs(t, err, &ise)
	var fields []string
	for _, p := range ise.Problems {
		fields = append(fields, p.Field)
		require.Contains(t, p.Message, "read-only")
	}
	require.Equal(t, []string{"id", "authorizationHeaderSet", "quota", "createdAt", "updatedAt"}, fields)
}

func TestDecodePatchTellsAbsentFromNull(t *testing.T) {
	t.Parallel()
	p, err := project.DecodePatch([]byte(`{"authorizationHeader":null,"retryPolicy":{"jitter":false,"delaySecs":null}}`))
	require.NoError(t, err)
	require.Equal(t, project.Patch{
		AuthorizationHeader: project.Null[string](),
		RetryPolicy: project.Value(project.RetryPolicyPatch{
			Jitter:    project.Value(false),
			DelaySecs: project.Null[int](),
		}),
	}, p)
	p, err = project.DecodePatch([]byte(`{"asyncTimeoutSecs":60}`))
	require.NoError(t, err)
	require.Equal(t, project.Patch{AsyncTimeoutSecs: project.Value(60)}, p)
}

// Two changes at once to different fields both take effect: each merges
// into the settings the other committed.
func TestConcurrentUpdatesDoNotUndoEachOther(t *testing.T) {
	t.Parallel()
	b := setup(t)
	patches := []project.Patch{
		{Name: project.Value("Renamed")},
		{AsyncTimeoutSecs: project.Value(42)},
		{RetryPolicy: project.Value(project.RetryPolicyPatch{MinRetries: project.Value(9)})},
		{RetryPolicy: project.Value(project.RetryPolicyPatch{Strategy: project.Value("fixed")})},
		{AuthorizationHeader: project.Value("Bearer t")},
	}
	errs := make([]error, len(patches))
	var wg sync.WaitGroup
	for i, p := range patches {
		wg.Go(func() { _, errs[i] = b.settings.Update(b.ctx, b.id, p) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	s := b.get(t)
	require.Equal(t, "Renamed", s.Name)
	require.Equal(t, 42, s.AsyncTimeoutSecs)
	require.Equal(t, 9, s.RetryPolicy.MinRetries)
	require.Equal(t, "fixed", s.RetryPolicy.Strategy)
	require.True(t, s.AuthorizationHeaderSet)
}

func TestAbsentNullAndValueOfMaxConcurrency(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Nil(t, b.get(t).MaxConcurrency, "no cap by default")

	s, err := b.patch(t, `{"maxConcurrency":8}`)
	require.NoError(t, err)
	require.NotNil(t, s.MaxConcurrency)
	require.Equal(t, 8, *s.MaxConcurrency)
	require.Equal(t, s, b.get(t), "stored as returned")

	s, err = b.patch(t, `{"name":"Renamed"}`)
	require.NoError(t, err)
	require.Equal(t, 8, *s.MaxConcurrency, "absent: unchanged")

	s, err = b.patch(t, `{"maxConcurrency":null}`)
	require.NoError(t, err)
	require.Nil(t, s.MaxConcurrency, "null: no cap")
	require.Equal(t, s, b.get(t))
}

// TestRetentionDaysIsBoundedByThePlan: retentionDays may be set up to the
// plan's bound, which only the operator moves; lowering the bound leaves
// the setting as it is (the cleaner keeps hooks no longer than the bound).
func TestRetentionDaysIsBoundedByThePlan(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s, err := b.patch(t, `{"retentionDays":90}`)
	require.NoError(t, err)
	require.Equal(t, 90, s.RetentionDays)
	require.Equal(t, s, b.get(t), "stored as returned")

	_, err = b.patch(t, `{"retentionDays":400}`)
	requireProblem(t, err, "retentionDays", "from 1 to 90, the plan's bound")

	q := store.New(b.pool)
	require.NoError(t, project.SetMaxRetentionDays(b.ctx, q, b.id, 400))
	s, err = b.patch(t, `{"retentionDays":400}`)
	require.NoError(t, err)
	require.Equal(t, 400, s.RetentionDays)
	require.Equal(t, 400, s.Quota.MaxRetentionDays)

	require.NoError(t, project.SetMaxRetentionDays(b.ctx, q, b.id, 7))
	s = b.get(t)
	require.Equal(t, 400, s.RetentionDays, "kept; the bound applies")
	require.Equal(t, 7, s.Quota.MaxRetentionDays)
	_, err = b.patch(t, `{"retentionDays":8}`)
	requireProblem(t, err, "retentionDays", "from 1 to 7, the plan's bound")
	s, err = b.patch(t, `{"retentionDays":1}`)
	require.NoError(t, err)
	require.Equal(t, 1, s.RetentionDays)

	require.Error(t, project.SetMaxRetentionDays(b.ctx, q, b.id, 0))
	require.Error(t, project.SetMaxRetentionDays(b.ctx, q, b.id, project.MaxRetentionDays+1))
	require.ErrorIs(t, project.SetMaxRetentionDays(b.ctx, q, uuid.New(), 30), postgres.ErrNotFound)
}
