package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
)

// orderingKeyJSON is the OrderingKey resource, decoded strictly.
type orderingKeyJSON struct {
	Key        string  `json:"key"`
	HeadHookID *string `json:"headHookId"`
	Held       bool    `json:"held"`
	Unfinished int64   `json:"unfinished"`
}

type orderingKeyPageJSON struct {
	Data []orderingKeyJSON `json:"data"`
	Meta struct {
		TotalItems       int64   `json:"totalItems"`
		TotalItemsCapped bool    `json:"totalItemsCapped"`
		NextCursor       *string `json:"nextCursor"`
	} `json:"meta"`
}

func (r response) orderingKey(t *testing.T) orderingKeyJSON {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	return decodeStrict[struct {
		Data orderingKeyJSON `json:"data"`
	}](t, r.body).Data
}

// orderingKeyPath is the key's resource, the key escaped as a path segment.
func orderingKeyPath(key string) string {
	return "/v1/ordering-keys/" + url.PathEscape(key)
}

func (b bundle) getOrderingKey(key string) response {
	b.t.Helper()
	return b.do(http.MethodGet, orderingKeyPath(key), nil)
}

func (b bundle) resumeOrderingKey(key string) response {
	b.t.Helper()
	return b.do(http.MethodPost, orderingKeyPath(key)+"/resume", nil)
}

func (b bundle) heldOrderingKeys(query string) orderingKeyPageJSON {
	b.t.Helper()
	res := b.do(http.MethodGet, "/v1/ordering-keys?held=true"+query, nil)
	require.Equal(b.t, http.StatusOK, res.status, string(res.body))
	return decodeStrict[orderingKeyPageJSON](b.t, res.body)
}

// holdProject makes the project's keys hold on a final failure.
func (b bundle) holdProject() {
	b.t.Helper()
	require.Equal(b.t, "hold", b.patchProject(`{"orderingOnFailure":"hold"}`).project(b.t).OrderingOnFailure)
}

// keyedHook schedules a hook of key, due at postAt.
func (b bundle) keyedHook(key string, postAt time.Time) hookJSON {
	b.t.Helper()
	res := b.post(fmt.Sprintf(`{"path":"/accounts","data":{},"postAt":%q,"orderingKey":%q}`, postAt.Format(time.RFC3339Nano), key))
	require.Equal(b.t, http.StatusCreated, res.status, string(res.body))
	return res.hook(b.t)
}

// failForGood leaves the key of hook id held behind it, as the scheduler
// does when a key's head fails for good under "hold".
func (b bundle) failForGood(id string) {
	b.t.Helper()
	require.NoError(b.t, b.tq.HoldOrderingKeyForTest(b.ctx, uuid.MustParse(id)))
}

// waitBehind moves hook id's run_at ahead, as the scheduler's claim does
// to a hook behind its key's head.
func (b bundle) waitBehind(id string) {
	b.t.Helper()
	require.NoError(b.t, b.tq.DeferHookForTest(b.ctx, uuid.MustParse(id)))
	require.True(b.t, b.storedHook(id).RunAt.After(b.dbNow()))
}

func TestAHookKeepsItsOrderingKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.post(`{"path":"/a","data":{},"postIn":"1h","orderingKey":"account:42"}`)
	require.Equal(t, http.StatusCreated, created.status, string(created.body))
	h := created.hook(t)
	require.Equal(t, "account:42", h.OrderingKey)
	require.Equal(t, "account:42", *b.storedHook(h.ID).OrderingKey)
	require.Equal(t, h, b.do(http.MethodGet, "/v1/hooks/"+h.ID, nil).hook(t))

	plain := b.post(`{"path":"/a","data":{},"postIn":"1h"}`)
	require.NotContains(t, string(plain.body), "orderingKey", "a hook without an ordering key shows none")
	require.Nil(t, b.storedHook(plain.hook(t).ID).OrderingKey)

	// A batch's hooks may share a key, and may have a key (which names
	// one hook) besides.
	batch := b.postBatch([]string{
		`{"path":"/b","data":{},"postIn":"1h","orderingKey":"account:42","key":"first"}`,
		`{"path":"/b","data":{},"postIn":"1h","orderingKey":"account:42"}`,
		`{"path":"/b","data":{},"postIn":"1h"}`,
	})
	require.Equal(t, http.StatusCreated, batch.status, string(batch.body))
	hooks := batch.hooks(t)
	require.Equal(t, []string{"account:42", "account:42", ""}, []string{hooks[0].OrderingKey, hooks[1].OrderingKey, hooks[2].OrderingKey})
	require.Equal(t, "first", hooks[0].Key)

	// The list shows it.
	_, page := b.list("limit=10&sortBy=createdAt&sortOrder=ASC")
	require.Len(t, page.Data, 5)
	require.Equal(t, "account:42", page.Data[0].OrderingKey)

	// A key's hooks show in its state.
	require.Equal(t, orderingKeyJSON{Key: "account:42", Unfinished: 3}, b.getOrderingKey("account:42").orderingKey(t))
}

func TestTheOrderingKeyIsPartOfTheIdempotentRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.post(`{"path":"/a","data":{},"postIn":"1h","orderingKey":"k1"}`, header("Idempotency-Key", "op-1"))
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	again := b.post(`{"path":"/a","data":{},"postIn":"1h","orderingKey":"k1"}`, header("Idempotency-Key", "op-1"))
	require.Equal(t, first.hook(t).ID, again.hook(t).ID, "a repeat answers the first hook")
	b.post(`{"path":"/a","data":{},"postIn":"1h","orderingKey":"k2"}`, header("Idempotency-Key", "op-1")).
		requireError(t, http.StatusConflict, "conflict", "Idempotency-Key")
	b.post(`{"path":"/a","data":{},"postIn":"1h"}`, header("Idempotency-Key", "op-1")).
		requireError(t, http.StatusConflict, "conflict", "Idempotency-Key")
}

func TestOrderingKeyValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, bad := range []string{`""`, `"` + strings.Repeat("k", 256) + `"`, `"caf\u00e9"`, `"tab\there"`, `42`} {
		b.post(`{"path":"/a","data":{},"postIn":"1h","orderingKey":`+bad+`}`).
			requireError(t, http.StatusBadRequest, "invalid_request", "orderingKey")
	}
	b.postBatch([]string{`{"path":"/a","data":{},"postIn":"1h"}`, `{"path":"/a","data":{},"postIn":"1h","orderingKey":""}`}).
		requireError(t, http.StatusBadRequest, "invalid_request", "hooks[1].orderingKey")
	require.Zero(t, b.hookCount())

	// The path's key, by the same rules.
	for _, bad := range []string{"tab\there", "caf\u00e9", strings.Repeat("k", 256)} {
		b.getOrderingKey(bad).requireError(t, http.StatusBadRequest, "invalid_request", "key")
		b.resumeOrderingKey(bad).requireError(t, http.StatusBadRequest, "invalid_request", "key")
	}
}

// TestAnEditCannotChangeTheOrderingKey: the ordering key is not an edit's
// to change; a replay copies it.
func TestAnEditCannotChangeTheOrderingKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.keyedHook("account:42", b.dbNow().Add(-time.Minute))
	require.NoError(t, b.tq.FinishHookForTest(b.ctx, storetest.FinishHookForTestParams{ID: uuid.MustParse(h.ID), Status: "completed"}))
	b.bulk("replay", `{"hookIDs":[`+fmt.Sprintf("%q", h.ID)+`],"edit":{"orderingKey":"other"}}`).
		requireError(t, http.StatusBadRequest, "invalid_request", "edit.orderingKey")

	require.Equal(t, 1, b.bulk("replay", idsBody(h.ID)).affected(t))
	_, page := b.list("limit=10")
	require.Len(t, page.Data, 2)
	for _, got := range page.Data {
		require.Equal(t, "account:42", got.OrderingKey, "hook %s", got.ID)
	}
}

func TestProjectOrderingOnFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, "continue", b.do(http.MethodGet, "/v1/project", nil).project(t).OrderingOnFailure)
	b.holdProject()
	require.Equal(t, "hold", b.do(http.MethodGet, "/v1/project", nil).project(t).OrderingOnFailure)
	p := b.patchProject(`{"name":"Renamed"}`).project(t)
	require.Equal(t, "hold", p.OrderingOnFailure, "a change that leaves it out keeps it")
	require.Equal(t, "continue", b.patchProject(`{"orderingOnFailure":"continue"}`).project(t).OrderingOnFailure)
}

// TestResumeAHeldKey: a key whose hook failed for good under "hold" is
// held, listed, and resumed: its next hook is due at once, the failed hook
// stays failed, and the key is free.
func TestResumeAHeldKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.holdProject()
	// A slash, a space and a percent sign travel escaped in the path.
	const key = "account/42 100%"
	past := b.dbNow().Add(-time.Minute)
	first := b.keyedHook(key, past)
	next := b.keyedHook(key, past.Add(time.Second))
	last := b.keyedHook(key, past.Add(2*time.Second))
	b.failForGood(first.ID)
	b.waitBehind(next.ID)
	b.waitBehind(last.ID)

	held := orderingKeyJSON{Key: key, HeadHookID: &first.ID, Held: true, Unfinished: 2}
	require.Equal(t, held, b.getOrderingKey(key).orderingKey(t))
	page := b.heldOrderingKeys("")
	require.Equal(t, []orderingKeyJSON{held}, page.Data)
	require.EqualValues(t, 1, page.Meta.TotalItems)
	require.Nil(t, page.Meta.NextCursor)

	resumed := b.resumeOrderingKey(key).orderingKey(t)
	require.Equal(t, orderingKeyJSON{Key: key, Unfinished: 2}, resumed)
	require.Equal(t, resumed, b.getOrderingKey(key).orderingKey(t))
	require.Empty(t, b.heldOrderingKeys("").Data)

	now := b.dbNow()
	require.False(t, b.storedHook(next.ID).RunAt.After(now), "the key's next hook is due")
	require.True(t, b.storedHook(last.ID).RunAt.After(now), "the one after it still waits its turn")
	require.Equal(t, "failed", b.status(first.ID), "the hook the key was held behind stays failed")
	row, err := b.tq.GetOrderingKeyForTest(b.ctx, storetest.GetOrderingKeyForTestParams{ProjectID: uuid.MustParse(b.creds.ProjectID), OrderingKey: key})
	require.NoError(t, err)
	require.Nil(t, row.ActiveHookID, "the key has no head")

	// It is not held any more.
	e := b.resumeOrderingKey(key).requireError(t, http.StatusConflict, "conflict")
	require.Contains(t, e.Error, "not held")
}

// TestAResumeRacingAClaimOfTheRetriedHeadLeavesTheKey: the key's failed
// head is retried in bulk and claimed again, in a transaction that commits
// while a resume waits for the key's row. The resume read the head as
// failed, but the key is no longer held: it answers 409 and the head keeps
// its key, instead of freeing it under a hook in flight.
func TestAResumeRacingAClaimOfTheRetriedHeadLeavesTheKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, next, waiting := b.heldKeyK()

	tx := b.beginOwnTx(b.dbURL)
	claim := storetest.New(tx)
	_, err := claim.LeaseHookForTest(b.ctx, uuid.MustParse(first.ID))
	require.NoError(t, err)
	require.NoError(t, claim.TakeOrderingKeyForTest(b.ctx, uuid.MustParse(first.ID)))

	resumed := make(chan response, 1)
	go func() { resumed <- b.resumeOrderingKey("k") }()
	b.waitForALockWait("the resume waits for the key's row")
	require.NoError(t, tx.Commit(b.ctx))

	e := (<-resumed).requireError(t, http.StatusConflict, "conflict")
	require.Contains(t, e.Error, "not held")
	row, err := b.tq.GetOrderingKeyForTest(b.ctx, storetest.GetOrderingKeyForTestParams{ProjectID: uuid.MustParse(b.creds.ProjectID), OrderingKey: "k"})
	require.NoError(t, err)
	require.NotNil(t, row.ActiveHookID)
	require.Equal(t, first.ID, row.ActiveHookID.String(), "the head in flight keeps its key")
	require.Equal(t, waiting, b.storedHook(next.ID).RunAt, "the resume's wake is rolled back")
}

// TestAResumeChosenAsADeadlockVictimIsA503: a transaction that holds the
// key's row and then asks for the hook the resume has woken (locks in the
// other order than the claim's, as no Sundial path takes them) deadlocks
// with the resume. PostgreSQL rolls the resume back: the answer is a 503
// with a short Retry-After, not a 500, nothing of the resume is written,
// and the same request passes once the other is gone.
//
// Which side PostgreSQL rolls back is the one whose deadlock check, made
// once, deadlock_timeout after it began to wait, finds the cycle. So the
// gateway's sessions check after 5 s, long after the test's transaction
// has closed the cycle even on a loaded machine, and the test's own after
// a minute, never within the test.
func TestAResumeChosenAsADeadlockVictimIsA503(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *app.Config) { c.DatabaseURL = withRuntimeParam(t, c.DatabaseURL, "deadlock_timeout", "5s") })
	first, next, waiting := b.heldKeyK()

	tx := b.beginOwnTx(withRuntimeParam(t, b.dbURL, "deadlock_timeout", "1min"))
	other := storetest.New(tx)
	require.NoError(t, other.TakeOrderingKeyForTest(b.ctx, uuid.MustParse(first.ID)))

	resumed := make(chan response, 1)
	go func() { resumed <- b.resumeOrderingKey("k") }()
	b.waitForALockWait("the resume has woken the next hook and waits for the key's row")
	_, err := other.LeaseHookForTest(b.ctx, uuid.MustParse(next.ID))
	require.NoError(t, err, "the resume, whose deadlock check comes first, is the deadlock's victim")

	res := <-resumed
	e := res.requireError(t, http.StatusServiceUnavailable, "unavailable")
	require.Contains(t, e.Error, "retry")
	require.Equal(t, "1", res.header.Get("Retry-After"))
	require.NoError(t, tx.Rollback(b.ctx))
	require.Equal(t, waiting, b.storedHook(next.ID).RunAt, "the resume's wake is rolled back")
	require.True(t, b.getOrderingKey("k").orderingKey(t).Held, "the key is still held")

	require.Equal(t, orderingKeyJSON{Key: "k", Unfinished: 1}, b.resumeOrderingKey("k").orderingKey(t),
		"the same request passes once the other transaction is gone")
}

// TestResumingAKeyThatIsNotHeldChangesNothing: a key whose hooks wait
// their turn, or whose failed hook does not hold it under "continue", is a
// 409, and its waiting hooks stay as they were.
func TestResumingAKeyThatIsNotHeldChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	past := b.dbNow().Add(-time.Minute)
	first := b.keyedHook("k", past)
	next := b.keyedHook("k", past.Add(time.Second))
	b.waitBehind(next.ID)
	waiting := b.storedHook(next.ID).RunAt

	// Never delivered: no head yet.
	b.resumeOrderingKey("k").requireError(t, http.StatusConflict, "conflict")
	require.Equal(t, waiting, b.storedHook(next.ID).RunAt, "the resume's wake was rolled back")

	// Failed for good under "continue": the key moves on by itself.
	b.failForGood(first.ID)
	require.Equal(t, orderingKeyJSON{Key: "k", Unfinished: 1}, b.getOrderingKey("k").orderingKey(t))
	b.resumeOrderingKey("k").requireError(t, http.StatusConflict, "conflict")
	require.Empty(t, b.heldOrderingKeys("").Data)
}

// TestDeletingTheHeldHookFreesItsKey, as the document says: the key's next
// hook is due at once.
func TestDeletingTheHeldHookFreesItsKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.holdProject()
	past := b.dbNow().Add(-time.Minute)
	first := b.keyedHook("k", past)
	next := b.keyedHook("k", past.Add(time.Second))
	b.failForGood(first.ID)
	b.waitBehind(next.ID)
	require.True(t, b.getOrderingKey("k").orderingKey(t).Held)

	deleted := b.do(http.MethodDelete, "/v1/hooks/"+first.ID, nil)
	require.Equal(t, http.StatusOK, deleted.status, string(deleted.body))
	require.Equal(t, orderingKeyJSON{Key: "k", Unfinished: 1}, b.getOrderingKey("k").orderingKey(t))
	require.False(t, b.storedHook(next.ID).RunAt.After(b.dbNow()), "the key's next hook is due")
}

func TestAnUnknownOrderingKeyIs404(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.getOrderingKey("nobody").requireError(t, http.StatusNotFound, "not_found")
	b.resumeOrderingKey("nobody").requireError(t, http.StatusNotFound, "not_found")
	// A key is not an ordering key.
	res := b.post(`{"path":"/a","data":{},"postIn":"1h","key":"reminder"}`)
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	b.getOrderingKey("reminder").requireError(t, http.StatusNotFound, "not_found")
}

func TestHeldOrderingKeysArePaged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.holdProject()
	past := b.dbNow().Add(-time.Minute)
	keys := []string{"a", "b/1", "c"}
	for _, k := range keys {
		b.failForGood(b.keyedHook(k, past).ID)
	}
	// A key that is not held is not listed.
	b.keyedHook("d", past)

	first := b.heldOrderingKeys("&limit=2")
	require.Equal(t, []string{"a", "b/1"}, []string{first.Data[0].Key, first.Data[1].Key})
	require.EqualValues(t, 3, first.Meta.TotalItems)
	require.NotNil(t, first.Meta.NextCursor)
	second := b.heldOrderingKeys("&limit=2&cursor=" + url.QueryEscape(*first.Meta.NextCursor))
	require.Len(t, second.Data, 1)
	require.Equal(t, "c", second.Data[0].Key)
	require.Nil(t, second.Meta.NextCursor)

	b.do(http.MethodGet, "/v1/ordering-keys?held=true&cursor=bogus", nil).requireError(t, http.StatusBadRequest, "invalid_request", "cursor")
	b.do(http.MethodGet, "/v1/ordering-keys?held=true&limit=0", nil).requireError(t, http.StatusBadRequest, "invalid_request", "limit")
	b.do(http.MethodGet, "/v1/ordering-keys?held=false", nil).requireError(t, http.StatusBadRequest, "invalid_request", "held")
	b.do(http.MethodGet, "/v1/ordering-keys?held=true&status=failed", nil).requireError(t, http.StatusBadRequest, "invalid_request", "status")
}

// keyPages follows GET /v1/hooks?query from its first page to its last,
// checking that every page counts total hooks, and returns the ids in the
// order received and the number of pages.
func (b bundle) keyPages(query string, total int64) ([]string, int) {
	b.t.Helper()
	var ids []string
	cursor := ""
	for pages := 1; pages <= 20; pages++ {
		res, page := b.list(query + "&cursor=" + url.QueryEscape(cursor))
		require.Equal(b.t, http.StatusOK, res.status, string(res.body))
		require.Equal(b.t, total, page.Meta.TotalItems, query)
		for _, h := range page.Data {
			ids = append(ids, h.ID)
		}
		if page.Meta.NextCursor == nil {
			return ids, pages
		}
		cursor = *page.Meta.NextCursor
	}
	b.t.Fatalf("paging %s does not end", query)
	return nil, 0
}

// TestListTheHooksOfAnOrderingKey: GET /v1/hooks?orderingKey= lists the
// key's hooks and no other's, nor unkeyed ones, in pages, newest first or
// by postAt, with a status filter; its cursor is the key's query's only;
// an empty or over-long key is a 400 naming orderingKey.
func TestListTheHooksOfAnOrderingKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A slash, a space and a percent sign travel escaped in the query.
	const key, other = "account/42 100%", "account/7"
	start := b.dbNow().Add(time.Hour)
	var mine, others []hookJSON
	for i := range 5 {
		mine = append(mine, b.keyedHook(key, start.Add(time.Duration(5-i)*time.Minute)))
		others = append(others, b.keyedHook(other, start.Add(time.Duration(i)*time.Minute)))
		res := b.post(`{"path":"/plain","data":{},"postIn":"1h"}`)
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
	}
	for _, h := range []hookJSON{mine[1], mine[3], others[0]} {
		require.NoError(t, b.tq.FinishHookForTest(b.ctx, storetest.FinishHookForTestParams{ID: uuid.MustParse(h.ID), Status: "failed"}))
	}
	ids := func(hooks ...hookJSON) []string {
		out := make([]string, len(hooks))
		for i, h := range hooks {
			out[i] = h.ID
		}
		return out
	}
	q := "orderingKey=" + url.QueryEscape(key)

	// Newest first (the default), two a page: created in turn.
	got, pages := b.keyPages(q+"&limit=2", 5)
	require.Equal(t, ids(mine[4], mine[3], mine[2], mine[1], mine[0]), got)
	require.Equal(t, 3, pages)
	// By postAt, the key's delivery order: the reverse of creation here.
	got, pages = b.keyPages(q+"&limit=2&sortBy=postAt&sortOrder=ASC", 5)
	require.Equal(t, ids(mine[4], mine[3], mine[2], mine[1], mine[0]), got)
	require.Equal(t, 3, pages)
	// With a status filter.
	got, pages = b.keyPages(q+"&limit=1&status=failed", 2)
	require.Equal(t, ids(mine[3], mine[1]), got)
	require.Equal(t, 2, pages)
	got, _ = b.keyPages(q+"&status=pending&sortBy=postAt", 3)
	require.Equal(t, ids(mine[0], mine[2], mine[4]), got)
	// The other key's, and no key's hooks for a key nobody has.
	got, _ = b.keyPages("orderingKey="+url.QueryEscape(other)+"&status=failed", 1)
	require.Equal(t, ids(others[0]), got)
	got, _ = b.keyPages("orderingKey=account", 0)
	require.Empty(t, got)
	_, all := b.list("limit=1000")
	require.Len(t, all.Data, 15, "without the filter, every hook")

	// A cursor belongs to its key's query.
	_, first := b.list(q + "&limit=2")
	require.NotNil(t, first.Meta.NextCursor)
	for _, query := range []string{"orderingKey=" + url.QueryEscape(other), "", q + "&status=failed"} {
		res, _ := b.list(query + "&limit=2&cursor=" + url.QueryEscape(*first.Meta.NextCursor))
		e := res.requireError(t, http.StatusBadRequest, "invalid_request", "cursor")
		require.Contains(t, e.Error, "does not belong to this query")
	}

	// The bounds of a hook's orderingKey.
	for _, bad := range []string{"", strings.Repeat("k", 256), url.QueryEscape("caf\u00e9"), "tab%09here"} {
		res, _ := b.list("orderingKey=" + bad)
		e := res.requireError(t, http.StatusBadRequest, "invalid_request", "orderingKey")
		require.Contains(t, e.Details[0].Message, "1 to 255 printable ASCII characters")
	}
	res, _ := b.list("orderingKey=a&orderingKey=b")
	res.requireError(t, http.StatusBadRequest, "invalid_request", "orderingKey")
	got, _ = b.keyPages("orderingKey="+strings.Repeat("k", 255), 0)
	require.Empty(t, got)
}

// TestSwitchingToContinueResumesTheHeldKeys: a project's change from
// "hold" to "continue" resumes its held keys in the same change, as
// POST /v1/ordering-keys/{key}/resume does each: their next hooks are due
// at once, the hooks after them still wait their turn, the failed hooks
// stay failed, and the keys have no head. A key that is not held (its
// head in flight) is left as it was, and the answer is the project, as
// for any change.
func TestSwitchingToContinueResumesTheHeldKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.holdProject()
	projectID := uuid.MustParse(b.creds.ProjectID)
	past := b.dbNow().Add(-time.Minute)
	type keyHooks struct{ failed, next, last hookJSON }
	held := map[string]keyHooks{}
	for _, key := range []string{"account/1", "account 2"} {
		k := keyHooks{b.keyedHook(key, past), b.keyedHook(key, past.Add(time.Second)), b.keyedHook(key, past.Add(2*time.Second))}
		b.failForGood(k.failed.ID)
		b.waitBehind(k.next.ID)
		b.waitBehind(k.last.ID)
		held[key] = k
	}
	// The third key's head is being delivered; its next hook waits.
	head, behind := b.keyedHook("account/3", past), b.keyedHook("account/3", past.Add(time.Second))
	_, err := b.tq.LeaseHookForTest(b.ctx, uuid.MustParse(head.ID))
	require.NoError(t, err)
	require.NoError(t, b.tq.TakeOrderingKeyForTest(b.ctx, uuid.MustParse(head.ID)))
	b.waitBehind(behind.ID)
	waiting := b.storedHook(behind.ID).RunAt
	require.EqualValues(t, 2, b.heldOrderingKeys("").Meta.TotalItems)

	changed := b.patchProject(`{"orderingOnFailure":"continue"}`).project(t)
	require.Equal(t, "continue", changed.OrderingOnFailure)
	require.Equal(t, changed, b.do(http.MethodGet, "/v1/project", nil).project(t), "the answer is the project")

	now := b.dbNow()
	for key, k := range held {
		require.False(t, b.storedHook(k.next.ID).RunAt.After(now), "%s: the key's next hook is due", key)
		require.True(t, b.storedHook(k.last.ID).RunAt.After(now), "%s: the one after it still waits its turn", key)
		require.Equal(t, "failed", b.status(k.failed.ID), "%s: the hook the key was held behind stays failed", key)
		row, err := b.tq.GetOrderingKeyForTest(b.ctx, storetest.GetOrderingKeyForTestParams{ProjectID: projectID, OrderingKey: key})
		require.NoError(t, err)
		require.Nil(t, row.ActiveHookID, "%s: the key has no head", key)
		require.Equal(t, orderingKeyJSON{Key: key, Unfinished: 2}, b.getOrderingKey(key).orderingKey(t))
	}
	row, err := b.tq.GetOrderingKeyForTest(b.ctx, storetest.GetOrderingKeyForTestParams{ProjectID: projectID, OrderingKey: "account/3"})
	require.NoError(t, err)
	require.Equal(t, head.ID, row.ActiveHookID.String(), "the key that was not held keeps its head")
	require.Equal(t, waiting, b.storedHook(behind.ID).RunAt, "and its next hook still waits")
	require.Empty(t, b.heldOrderingKeys("").Data)
}

// TestSwitchingToContinueResumesThousandsOfHeldKeys: one change resumes
// every held key, however many.
func TestSwitchingToContinueResumesThousandsOfHeldKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.holdProject()
	projectID := uuid.MustParse(b.creds.ProjectID)
	const keys = 2000
	past := b.dbNow().Add(-time.Minute)
	for batch := range 2 * keys / 1000 {
		hooks := make([]string, 1000)
		for i := range hooks {
			n := batch*1000 + i
			// Each key's first hook, then its next.
			hooks[i] = fmt.Sprintf(`{"path":"/k","data":{},"postAt":%q,"orderingKey":"key-%d"}`,
				past.Add(time.Duration(n/keys)*time.Second).Format(time.RFC3339Nano), n%keys)
		}
		res := b.postBatch(hooks)
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
	}
	n, err := b.tq.HoldEveryOrderingKeyForTest(b.ctx, projectID)
	require.NoError(t, err)
	require.EqualValues(t, keys, n)
	state, err := b.tq.OrderingKeysStateForTest(b.ctx, projectID)
	require.NoError(t, err)
	require.Equal(t, storetest.OrderingKeysStateForTestRow{WithHead: keys, Due: 0, Waiting: keys}, state)
	require.EqualValues(t, keys, b.heldOrderingKeys("").Meta.TotalItems)

	require.Equal(t, "continue", b.patchProject(`{"orderingOnFailure":"continue"}`).project(t).OrderingOnFailure)
	state, err = b.tq.OrderingKeysStateForTest(b.ctx, projectID)
	require.NoError(t, err)
	require.Equal(t, storetest.OrderingKeysStateForTestRow{WithHead: 0, Due: keys, Waiting: 0}, state,
		"every key's next hook is due, and no key has a head")
}

// withRuntimeParam adds a PostgreSQL setting to a connection URL, which
// pgx sends when the session starts.
func withRuntimeParam(t *testing.T, dbURL, name, value string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// heldKeyK makes key "k" held: its first hook failed for good under
// "hold", its next one waits behind it (run_at as it waits).
func (b bundle) heldKeyK() (first, next hookJSON, waiting *time.Time) {
	b.t.Helper()
	b.holdProject()
	past := b.dbNow().Add(-time.Minute)
	first = b.keyedHook("k", past)
	next = b.keyedHook("k", past.Add(time.Second))
	b.failForGood(first.ID)
	b.waitBehind(next.ID)
	return first, next, b.storedHook(next.ID).RunAt
}

// beginOwnTx opens a transaction on a connection of its own to dbURL,
// outside the gateway, closed when the test ends.
func (b bundle) beginOwnTx(dbURL string) pgx.Tx {
	b.t.Helper()
	conn, err := pgx.Connect(b.ctx, dbURL)
	require.NoError(b.t, err)
	b.t.Cleanup(func() { _ = conn.Close(context.Background()) })
	tx, err := conn.Begin(b.ctx)
	require.NoError(b.t, err)
	return tx
}

// waitForALockWait waits until a session of the test's database waits
// for a lock another holds.
func (b bundle) waitForALockWait(what string) {
	b.t.Helper()
	require.Eventually(b.t, func() bool {
		n, err := b.tq.CountLockWaitsForBulkTest(b.ctx)
		return err == nil && n > 0
	}, 10*time.Second, 5*time.Millisecond, what)
}
