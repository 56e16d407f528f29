package hook_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/idempotency"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
)

func keyed(path, key string) hook.New {
	n := newHook(path, "")
	n.Key = key
	return n
}

func TestAKeyReplacesItsPendingHook(t *testing.T) {
	t.Parallel()
	b := setupCreate(t)
	first, _, err := b.hooks.Create(b.ctx, b.project, keyed("/first", "reminder"))
	require.NoError(t, err)
	require.Equal(t, "reminder", *first.Key)
	other, _, err := b.hooks.Create(b.ctx, b.project, keyed("/other", "other"))
	require.NoError(t, err)

	second, _, err := b.hooks.Create(b.ctx, b.project, keyed("/second", "reminder"))
	require.NoError(t, err)
	require.NotEqual(t, first.ID, second.ID)

	_, err = b.hooks.Get(b.ctx, b.project, first.ID)
	require.ErrorIs(t, err, hook.ErrNotFound, "the replaced hook is gone")
	got, err := b.hooks.GetByKey(b.ctx, b.project, "reminder")
	require.NoError(t, err)
	require.Equal(t, second.ID, got.ID)
	require.Equal(t, "/second", got.Path)
	_, err = b.hooks.Get(b.ctx, b.project, other.ID)
	require.NoError(t, err, "another key's hook stays")
	require.Equal(t, int64(3), b.used(), "a replacement is a create")
}

func TestAClaimedHookIsNotReplaced(t *testing.T) {
	t.Parallel()
	b := setupCreate(t)
	first, _, err := b.hooks.Create(b.ctx, b.project, keyed("/first", "reminder"))
	require.NoError(t, err)
	_, err = storetest.New(b.pool).LeaseHookForTest(b.ctx, first.ID)
	require.NoError(t, err)

	_, _, err = b.hooks.Create(b.ctx, b.project, keyed("/second", "reminder"))
	var replace *hook.ReplaceError
	require.ErrorAs(t, err, &replace)
	require.Equal(t, first.ID, replace.HookID)
	require.Equal(t, "reminder", replace.Key)
	require.Equal(t, int64(1), b.used(), "the refused create is not counted")

	got, err := b.hooks.GetByKey(b.ctx, b.project, "reminder")
	require.NoError(t, err)
	require.Equal(t, first.ID, got.ID, "the claimed hook stays")

	require.NoError(t, b.hooks.DeleteByKey(b.ctx, b.project, "reminder"))
	second, _, err := b.hooks.Create(b.ctx, b.project, keyed("/second", "reminder"))
	require.NoError(t, err, "deleting the claimed hook frees its key")
	require.Equal(t, "/second", second.Path)
}

func TestAHookWaitingForARetryIsNotReplaced(t *testing.T) {
	t.Parallel()
	b := setupCreate(t)
	first, _, err := b.hooks.Create(b.ctx, b.project, keyed("/first", "reminder"))
	require.NoError(t, err)
	require.NoError(t, storetest.New(b.pool).FinishHookForTest(b.ctx, storetest.FinishHookForTestParams{ID: first.ID, Status: "retry"}))

	_, _, err = b.hooks.Create(b.ctx, b.project, keyed("/second", "reminder"))
	var replace *hook.ReplaceError
	require.ErrorAs(t, err, &replace)
	require.Equal(t, first.ID, replace.HookID)
}

func TestAFinishedHooksKeyCreatesANewHook(t *testing.T) {
	t.Parallel()
	b := setupCreate(t)
	st := storetest.New(b.pool)
	first, _, err := b.hooks.Create(b.ctx, b.project, keyed("/first", "reminder"))
	require.NoError(t, err)
	require.NoError(t, st.FinishHookForTest(b.ctx, storetest.FinishHookForTestParams{ID: first.ID, Status: "completed"}))

	second, _, err := b.hooks.Create(b.ctx, b.project, keyed("/second", "reminder"))
	require.NoError(t, err)
	_, err = b.hooks.Get(b.ctx, b.project, first.ID)
	require.NoError(t, err, "the finished hook stays beside the new one")
	got, err := b.hooks.GetByKey(b.ctx, b.project, "reminder")
	require.NoError(t, err)
	require.Equal(t, second.ID, got.ID, "the unfinished hook is the one the key names")

	require.NoError(t, st.FinishHookForTest(b.ctx, storetest.FinishHookForTestParams{ID: second.ID, Status: "failed"}))
	got, err = b.hooks.GetByKey(b.ctx, b.project, "reminder")
	require.NoError(t, err)
	require.Equal(t, second.ID, got.ID, "with none unfinished, the newest")

	require.NoError(t, b.hooks.DeleteByKey(b.ctx, b.project, "reminder"))
	got, err = b.hooks.GetByKey(b.ctx, b.project, "reminder")
	require.NoError(t, err)
	require.Equal(t, first.ID, got.ID)
	require.NoError(t, b.hooks.DeleteByKey(b.ctx, b.project, "reminder"))
	require.ErrorIs(t, b.hooks.DeleteByKey(b.ctx, b.project, "reminder"), hook.ErrNotFound)
	_, err = b.hooks.GetByKey(b.ctx, b.project, "reminder")
	require.ErrorIs(t, err, hook.ErrNotFound)
}

func TestAKeyIsItsProjects(t *testing.T) {
	t.Parallel()
	b := setupBatch(t)
	other := b.other
	mine, _, err := b.hooks.Create(b.ctx, b.project, keyed("/mine", "reminder"))
	require.NoError(t, err)
	_, _, err = b.hooks.Create(b.ctx, other, keyed("/theirs", "reminder"))
	require.NoError(t, err)

	got, err := b.hooks.GetByKey(b.ctx, b.project, "reminder")
	require.NoError(t, err)
	require.Equal(t, mine.ID, got.ID, "another project's hook of the same key neither replaced it nor is found")
}

func TestConcurrentCreatesOfOneKeyLeaveOneHook(t *testing.T) {
	t.Parallel()
	b := setupCreate(t)
	const requests = 20
	errs := make(chan error, requests)
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			_, _, err := b.hooks.Create(b.ctx, b.project, keyed(fmt.Sprintf("/%d", i), "same"))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "each replaced the one before")
	}
	n, err := storetest.New(b.pool).CountHooksForTest(b.ctx, b.project)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
}

func TestARepeatedIdempotencyKeyReplacesNothing(t *testing.T) {
	t.Parallel()
	b := setupCreate(t)
	req := keyed("/a", "reminder")
	req.IdempotencyKey = "idem"
	first, _, err := b.hooks.Create(b.ctx, b.project, req)
	require.NoError(t, err)
	again, _, err := b.hooks.Create(b.ctx, b.project, req)
	require.NoError(t, err)
	require.Equal(t, first.ID, again.ID, "the same answer, not a replacement")
	_, err = b.hooks.Get(b.ctx, b.project, first.ID)
	require.NoError(t, err)

	other := req
	other.Key = "another"
	_, _, err = b.hooks.Create(b.ctx, b.project, other)
	require.ErrorIs(t, err, idempotency.ErrKeyReused, "the key is part of the request")

	other.IdempotencyKey = "idem-2"
	other.Key = "reminder"
	replaced, _, err := b.hooks.Create(b.ctx, b.project, other)
	require.NoError(t, err)
	_, _, err = b.hooks.Create(b.ctx, b.project, req)
	require.ErrorIs(t, err, idempotency.ErrHookDeleted, "the first request's hook was replaced since")
	got, err := b.hooks.GetByKey(b.ctx, b.project, "reminder")
	require.NoError(t, err)
	require.Equal(t, replaced.ID, got.ID)
}

func TestABatchReplacesItsKeysHooksAllOrNone(t *testing.T) {
	t.Parallel()
	b := setupCreate(t)
	a, _, err := b.hooks.Create(b.ctx, b.project, keyed("/a", "a"))
	require.NoError(t, err)
	claimed, _, err := b.hooks.Create(b.ctx, b.project, keyed("/c", "c"))
	require.NoError(t, err)
	_, err = storetest.New(b.pool).LeaseHookForTest(b.ctx, claimed.ID)
	require.NoError(t, err)

	_, _, err = b.hooks.CreateAll(b.ctx, b.project, hook.NewBatch{Hooks: []hook.New{keyed("/a2", "a"), keyed("/c2", "c")}})
	var replace *hook.ReplaceError
	require.ErrorAs(t, err, &replace)
	require.Equal(t, claimed.ID, replace.HookID)
	_, err = b.hooks.Get(b.ctx, b.project, a.ID)
	require.NoError(t, err, "the refused batch replaced nothing")

	hooks, _, err := b.hooks.CreateAll(b.ctx, b.project, hook.NewBatch{Hooks: []hook.New{keyed("/a2", "a"), keyed("/b", "b"), newHook("/none", "")}})
	require.NoError(t, err)
	require.Equal(t, "a", *hooks[0].Key)
	require.Nil(t, hooks[2].Key)
	_, err = b.hooks.Get(b.ctx, b.project, a.ID)
	require.ErrorIs(t, err, hook.ErrNotFound)
}

func TestKeyValidation(t *testing.T) {
	t.Parallel()
	valid := func(key string) hook.CreateRequest {
		path, in := "/a", "1m"
		return hook.CreateRequest{Path: &path, PostIn: &in, Data: json.RawMessage(`{}`), Key: &key}
	}
	for _, key := range []string{"", "tab\there", "é", string(make([]byte, 256))} {
		_, err := valid(key).Validate(1 << 20)
		var invalid *hook.InvalidError
		require.ErrorAs(t, err, &invalid, "%q", key)
		require.Equal(t, "key", invalid.Problems[0].Field)
	}
	n, err := valid("reminder:user 42/~").Validate(1 << 20)
	require.NoError(t, err)
	require.Equal(t, "reminder:user 42/~", n.Key)

	_, err = hook.BatchRequest{Hooks: []hook.CreateRequest{valid("k"), valid("j"), valid("k")}}.Validate(1 << 20)
	var invalid *hook.BatchInvalidError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, []hook.FieldError{{Field: "hooks[2].key", Message: "repeats hooks[0].key; a batch's keys must differ"}}, invalid.Problems)
}
