package hook_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/idempotency"
)

func TestTagsArePartOfTheIdempotentRequest(t *testing.T) {
	t.Parallel()
	b := setupCreate(t)
	req := newHook("/a", "idem")
	req.Tags = []string{"a", "b"}
	first, _, err := b.hooks.Create(b.ctx, b.project, req)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, first.Tags)
	again, _, err := b.hooks.Create(b.ctx, b.project, req)
	require.NoError(t, err)
	require.Equal(t, first.ID, again.ID)

	req.Tags = []string{"b", "a"}
	_, _, err = b.hooks.Create(b.ctx, b.project, req)
	require.ErrorIs(t, err, idempotency.ErrKeyReused, "the tags' order is the request's")
}
