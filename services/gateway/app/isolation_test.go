package app_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
	"github.com/sundial-run/sundial/services/gateway/openapi/contract"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

// TestIsolationWalk calls every operation of the OpenAPI document with a
// second project's key, aimed at the first project's hooks and keys. Each
// answer must be a 404, an `affected` of 0, or the second project's own
// data; and afterwards the first project must be exactly as it was.
func TestIsolationWalk(t *testing.T) {
	t.Parallel()
	a := setup(t)
	other, err := app.CreateProject(t.Context(), app.Database{URL: a.dbURL, SecretKeys: secrettest.Keys}, "Intruder", "intruder.example.com")
	require.NoError(t, err)
	as := as(other.APIKey)

	// The first project's resources, in every state a bulk action acts on.
	day := time.Date(2031, 6, 1, 0, 0, 0, 0, time.UTC)
	hooks := map[string]string{}
	for _, status := range []string{"pending", "retry", "failed", "completed"} {
		hooks[status] = a.stateHook(a.creds.ProjectID, status, day.Add(time.Hour))
	}
	ids := slices.Collect(func(yield func(string) bool) {
		for _, id := range hooks {
			if !yield(id) {
				return
			}
		}
	})
	aKeys := a.apiKeys()
	require.Len(t, aKeys, 1)
	aSigning := a.signingKeys()
	require.Len(t, aSigning, 1)
	// A held ordering key.
	a.holdProject()
	aHeld := a.keyedHook("line", day.Add(time.Hour))
	a.failForGood(aHeld.ID)
	aProject := a.do(http.MethodGet, "/v1/project", nil).project(t)
	aChannel := a.createChannel(emailBody)
	a.pauseEndpoint(a.creds.ProjectID, "hooks.example.com")
	aEndpoints := a.endpoints()
	require.Len(t, aEndpoints, 1)
	aSequence := a.createSequence(fmt.Sprintf(weekdaysParis, "etl"))
	aSequenceHook := a.sequenceHook(uuid.MustParse(aSequence.ID), "pending", day.Add(time.Hour))
	aKeyed := a.post(`{"path":"/reminder","postIn":"1h","data":{},"key":"shared"}`).hook(t)
	// A bulk job that another gateway's runner holds: it stays running.
	aJob, err := a.tq.InsertLeasedBulkJobForTest(a.ctx, storetest.InsertLeasedBulkJobForTestParams{
		ID: uuid.Must(uuid.NewV7()), ProjectID: uuid.MustParse(a.creds.ProjectID), StartTime: day, EndTime: day.Add(24 * time.Hour), Total: 2,
	})
	require.NoError(t, err)
	aJobBefore := a.bulkJob(aJob.ID.String())
	rangeBody := func() string {
		return fmt.Sprintf(`{"startTime":%q,"endTime":%q,"limit":1000}`,
			day.Format(time.RFC3339), day.Add(24*time.Hour).Format(time.RFC3339))
	}

	walked := map[string]bool{}
	walk := func(operationID string, check func()) {
		t.Helper()
		walked[operationID] = true
		check()
	}

	walk("createHook", func() {
		created := a.post(`{"path":"/mine","postIn":"1h","data":{}}`, as).hook(t)
		require.Equal(t, "intruder.example.com", created.Domain, "a hook is created in the caller's project")
		require.Equal(t, "gone", a.status(created.ID), "and is invisible to the first project")
	})
	walk("createHooks", func() {
		created := a.postBatch([]string{`{"path":"/mine","postIn":"1h","data":{}}`}, as).hooks(t)
		require.Len(t, created, 1)
		require.Equal(t, "intruder.example.com", created[0].Domain, "a batch is created in the caller's project")
		require.Equal(t, "gone", a.status(created[0].ID), "and is invisible to the first project")
	})
	walk("getHook", func() {
		for _, id := range ids {
			a.do(http.MethodGet, "/v1/hooks/"+id, nil, as).requireError(t, http.StatusNotFound, "not_found")
		}
	})
	walk("deleteHook", func() {
		for _, id := range ids {
			a.do(http.MethodDelete, "/v1/hooks/"+id, nil, as).requireError(t, http.StatusNotFound, "not_found")
		}
	})
	walk("getHookByKey", func() {
		a.do(http.MethodGet, "/v1/hooks/by-key?key=shared", nil, as).requireError(t, http.StatusNotFound, "not_found")
	})
	walk("deleteHookByKey", func() {
		a.do(http.MethodDelete, "/v1/hooks/by-key?key=shared", nil, as).requireError(t, http.StatusNotFound, "not_found")
	})
	// A create with the first project's key makes a hook of the caller's
	// own, replacing nothing of the first project's.
	created := a.post(`{"path":"/mine","postIn":"1h","data":{},"key":"shared"}`, as).hook(t)
	require.NotEqual(t, aKeyed.ID, created.ID)
	require.Equal(t, "pending", a.status(aKeyed.ID), "the first project's keyed hook is not replaced")
	walk("listHeldOrderingKeys", func() {
		res := a.do(http.MethodGet, "/v1/ordering-keys?held=true", nil, as)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.Empty(t, decodeStrict[orderingKeyPageJSON](t, res.body).Data)
	})
	walk("getOrderingKey", func() {
		a.do(http.MethodGet, orderingKeyPath("line"), nil, as).requireError(t, http.StatusNotFound, "not_found")
	})
	walk("resumeOrderingKey", func() {
		a.do(http.MethodPost, orderingKeyPath("line")+"/resume", nil, as).requireError(t, http.StatusNotFound, "not_found")
	})
	walk("listHookAttempts", func() {
		for _, id := range ids {
			a.do(http.MethodGet, "/v1/hooks/"+id+"/attempts", nil, as).requireError(t, http.StatusNotFound, "not_found")
		}
	})
	// The ack and nack URLs take no API key (their per-delivery token is the
	// credential, made with a secret of the hook's project): a guessed one
	// finds nothing.
	for _, kind := range []string{"ack", "nack"} {
		walk(kind+"Hook", func() {
			for _, id := range ids {
				a.do(http.MethodPost, "/v1/async/"+id+"/1/"+strings.Repeat("A", 43)+"/"+kind, strings.NewReader(`{}`),
					header("X-API-Key", "")).requireError(t, http.StatusNotFound, "not_found")
			}
		})
	}
	walk("listHooks", func() {
		res := a.do(http.MethodGet, "/v1/hooks?limit=1000", nil, as)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		for _, id := range ids {
			require.NotContains(t, string(res.body), id)
		}
	})
	for _, action := range []struct{ operationID, path string }{
		{"bulkRetry", "retry"}, {"bulkReplay", "replay"}, {"bulkCancel", "cancel"},
	} {
		walk(action.operationID, func() {
			byIDs := a.do(http.MethodPost, "/v1/hooks/bulk/"+action.path, strings.NewReader(idsBody(ids...)), as)
			require.Zero(t, byIDs.affected(t), "%s by ids", action.path)
			byRange := a.do(http.MethodPost, "/v1/hooks/bulk/"+action.path, strings.NewReader(rangeBody()), as)
			require.Zero(t, byRange.affected(t), "%s by range", action.path)
		})
	}
	walk("createBulkJob", func() {
		// Over the day of the first project's hooks: the job is the
		// caller's, and acts on none of them.
		body := fmt.Sprintf(`{"action":"cancel","startTime":%q,"endTime":%q}`, day.Format(time.RFC3339), day.Add(24*time.Hour).Format(time.RFC3339))
		created := data[bulkJobJSON](t, a.createJob(body, as), http.StatusAccepted)
		require.Zero(t, created.Total)
		done := a.waitJob(created.ID, "completed", as)
		require.Zero(t, done.Selected)
		a.do(http.MethodGet, "/v1/bulk-jobs/"+created.ID, nil).requireError(t, http.StatusNotFound, "not_found")
		dry := data[bulkJobDryRunJSON](t, a.createJob(strings.Replace(body, "{", `{"dryRun":true,`, 1), as), http.StatusOK)
		require.Zero(t, dry.Total)
		require.Empty(t, dry.Sample)
	})
	walk("listBulkJobs", func() {
		page := a.bulkJobs("", as)
		require.Len(t, page.Data, 1, "the caller's own job only")
		require.NotEqual(t, aJob.ID.String(), page.Data[0].ID)
	})
	walk("getBulkJob", func() {
		a.do(http.MethodGet, "/v1/bulk-jobs/"+aJob.ID.String(), nil, as).requireError(t, http.StatusNotFound, "not_found")
	})
	walk("cancelBulkJob", func() {
		a.do(http.MethodPost, "/v1/bulk-jobs/"+aJob.ID.String()+"/cancel", nil, as).requireError(t, http.StatusNotFound, "not_found")
	})
	walk("retryIDs", func() {
		body := fmt.Sprintf(`{"projectID":%q,"hookIDs":[%q]}`, a.creds.ProjectID, hooks["failed"])
		a.do(http.MethodPost, "/v1/hooks/retryIDs", strings.NewReader(body), as).requireError(t, http.StatusForbidden, "forbidden", "projectID")
		body = fmt.Sprintf(`{"projectID":%q,"hookIDs":[%q]}`, other.ProjectID, hooks["failed"])
		require.Zero(t, a.do(http.MethodPost, "/v1/hooks/retryIDs", strings.NewReader(body), as).affected(t))
	})
	walk("getProject", func() {
		got := a.do(http.MethodGet, "/v1/project", nil, as).project(t)
		require.Equal(t, other.ProjectID, got.ID)
	})
	walk("patchProject", func() {
		got := a.patchProject(`{"name":"Renamed intruder"}`, as).project(t)
		require.Equal(t, other.ProjectID, got.ID)
	})
	walk("listApiKeys", func() {
		for _, k := range a.apiKeys(as) {
			require.NotEqual(t, aKeys[0].ID, k.ID)
		}
	})
	walk("createApiKey", func() {
		a.createAPIKey(`{"name":"intruder's second key"}`, as)
	})
	walk("revokeApiKey", func() {
		a.do(http.MethodDelete, "/v1/api-keys/"+aKeys[0].ID, nil, as).requireError(t, http.StatusNotFound, "not_found")
	})
	walk("listSigningKeys", func() {
		for _, k := range a.signingKeys(as) {
			require.NotEqual(t, aSigning[0].ID, k.ID)
			require.NotEqual(t, aSigning[0].Key, k.Key)
		}
	})
	walk("rotateSigningKey", func() {
		res := a.do(http.MethodPost, "/v1/signing-keys/rotate", strings.NewReader(`{}`), as)
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
	})
	walk("revokeSigningKey", func() {
		a.do(http.MethodDelete, "/v1/signing-keys/"+aSigning[0].ID, nil, as).requireError(t, http.StatusNotFound, "not_found")
	})
	walk("listChannels", func() {
		res := a.do(http.MethodGet, "/v1/channels", nil, as)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.NotContains(t, string(res.body), aChannel.ID)
	})
	walk("createChannel", func() {
		created := a.createChannel(chatBody, as)
		a.do(http.MethodGet, "/v1/channels/"+created.ID, nil).requireError(t, http.StatusNotFound, "not_found")
		require.Equal(t, created, a.channel(created.ID, as), "created in the caller's project")
	})
	walk("getChannel", func() {
		a.do(http.MethodGet, "/v1/channels/"+aChannel.ID, nil, as).requireError(t, http.StatusNotFound, "not_found")
	})
	walk("patchChannel", func() {
		a.patchChannel(aChannel.ID, `{"name":"mine now"}`, as).requireError(t, http.StatusNotFound, "not_found")
	})
	walk("deleteChannel", func() {
		a.do(http.MethodDelete, "/v1/channels/"+aChannel.ID, nil, as).requireError(t, http.StatusNotFound, "not_found")
	})
	walk("listChannelSends", func() {
		a.do(http.MethodGet, "/v1/channels/"+aChannel.ID+"/sends", nil, as).requireError(t, http.StatusNotFound, "not_found")
	})
	walk("testChannel", func() {
		a.do(http.MethodPost, "/v1/channels/"+aChannel.ID+"/test", nil, as).requireError(t, http.StatusNotFound, "not_found")
	})
	walk("listEndpoints", func() {
		require.Empty(t, a.endpoints(as), "another project's endpoints are not listed")
	})
	walk("resumeEndpoint", func() {
		a.do(http.MethodPost, "/v1/endpoints/resume", strings.NewReader(`{"domain":"hooks.example.com"}`), as).
			requireError(t, http.StatusNotFound, "not_found")
	})
	walk("createListenerTicket", func() {
		res := a.do(http.MethodPost, "/v1/ws/ticket", nil, as)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		tk := decodeStrict[ticketJSON](t, res.body).Data
		w := dialURL(t, tk.URL+"?ticket="+tk.Ticket)
		require.Equal(t, other.ProjectID, w.expect("connected").str(t, "projectId"),
			"a ticket opens a socket of the caller's project")
	})

	walk("createSequence", func() {
		created := a.createSequence(fmt.Sprintf(weekdaysParis, "etl"), as)
		require.NotEqual(t, aSequence.ID, created.ID, "the same name is free in another project")
		a.do(http.MethodGet, "/v1/sequences/"+created.ID, nil).requireError(t, http.StatusNotFound, "not_found")
	})
	walk("listSequences", func() {
		list, meta := a.sequencePage("/v1/sequences", as)
		require.Len(t, list, 1)
		require.Equal(t, int64(1), meta.TotalItems)
		require.NotEqual(t, aSequence.ID, list[0].ID)
	})
	walk("previewSchedule", func() {
		res := a.do(http.MethodPost, "/v1/sequences/preview", strings.NewReader(`{"schedule":{"every":"1h"},"startAt":"2031-01-01T00:00:00Z","count":1}`), as)
		require.Equal(t, []time.Time{time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)}, res.runTimes(t))
	})
	for _, op := range []struct{ operationID, method, path, body string }{
		{"getSequence", http.MethodGet, "", ""},
		{"replaceSequence", http.MethodPut, "", fmt.Sprintf(weekdaysParis, "stolen")},
		{"deleteSequence", http.MethodDelete, "", ""},
		{"pauseSequence", http.MethodPost, "/pause", ""},
		{"resumeSequence", http.MethodPost, "/resume", ""},
		{"triggerSequence", http.MethodPost, "/trigger", ""},
		{"listSequenceRuns", http.MethodGet, "/runs", ""},
		{"previewSequence", http.MethodGet, "/preview", ""},
	} {
		walk(op.operationID, func() {
			var body io.Reader
			if op.body != "" {
				body = strings.NewReader(op.body)
			}
			a.do(op.method, "/v1/sequences/"+aSequence.ID+op.path, body, as).requireError(t, http.StatusNotFound, "not_found")
		})
	}

	// Every operation of the document was walked.
	spec, err := contract.Load("Sundial")
	require.NoError(t, err)
	for path, item := range spec.Doc.Paths.Map() {
		for method, op := range item.Operations() {
			require.True(t, walked[op.OperationID], "%s %s (%s) is not in the isolation walk", method, path, op.OperationID)
		}
	}

	// The first project is untouched.
	for status, id := range hooks {
		require.Equal(t, status, a.status(id), "hook %s", id)
	}
	after := a.apiKeys()
	require.Len(t, after, 1)
	require.Equal(t, aKeys[0].ID, after[0].ID)
	require.Empty(t, after[0].RevokedAt)
	require.Equal(t, aSigning, a.signingKeys())
	require.Equal(t, aProject, a.do(http.MethodGet, "/v1/project", nil).project(t))
	require.Equal(t, aChannel, a.channel(aChannel.ID))
	require.Equal(t, aEndpoints, a.endpoints(), "no resume was requested")
	require.Equal(t, aSequence, a.do(http.MethodGet, "/v1/sequences/"+aSequence.ID, nil).sequence(t))
	require.Equal(t, "pending", a.status(aSequenceHook), "the sequence's hooks were not cancelled")
	require.Equal(t, orderingKeyJSON{Key: "line", HeadHookID: &aHeld.ID, Held: true}, a.getOrderingKey("line").orderingKey(t),
		"the held key was not resumed")
	require.Equal(t, aJobBefore, a.bulkJob(aJob.ID.String()), "the bulk job was not cancelled")
	triggers, err := a.tq.ListSequenceTriggersForTest(a.ctx, uuid.MustParse(aSequence.ID))
	require.NoError(t, err)
	require.Empty(t, triggers, "no run was asked for")
	res := a.do(http.MethodGet, "/v1/hooks?limit=1000", nil)
	for _, id := range ids {
		require.Contains(t, string(res.body), id)
	}
}
