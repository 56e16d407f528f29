package scenario

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
)

// The ordering load is every key's hooks a millisecond apart from the
// instant, created interleaved and each key's in the reverse of its order,
// then the flow from the instant; the places check what the API stored.
func TestOrderingShape(t *testing.T) {
	t.Parallel()
	o := &orderingShape{keys: 3, perKey: 4, rate: 10, flowSeconds: 2}
	require.Equal(t, 12, o.keyed())
	require.Equal(t, 36, o.hooks(), "12 keyed, 20 of the flow, 4 of the other project's")
	t0 := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	specs := o.specs(t0, "other-api-key")
	require.Len(t, specs, o.hooks())

	require.Equal(t, orderingKey(0), specs[0].OrderingKey)
	require.Equal(t, orderingKey(1), specs[1].OrderingKey, "keys interleaved")
	require.Equal(t, orderingKey(0), specs[3].OrderingKey)
	require.Equal(t, t0.Add(3*time.Millisecond), specs[0].PostAt, "a key's last hook is created first")
	require.Equal(t, t0.Add(2*time.Millisecond), specs[3].PostAt)
	require.Equal(t, t0, specs[9].PostAt, "and its first last")
	seqs := map[string][]int{}
	for i, s := range specs[:o.keyed()] {
		require.Equal(t, orderingKeyedPath, s.Path)
		p, ok := o.place(i)
		require.True(t, ok)
		require.Equal(t, orderingKey(p.Key), s.OrderingKey)
		require.Equal(t, t0.Add(time.Duration(p.Seq)*time.Millisecond), s.PostAt)
		seqs[s.OrderingKey] = append(seqs[s.OrderingKey], p.Seq)
	}
	require.Len(t, seqs, 3)
	for key, got := range seqs {
		require.Equal(t, []int{3, 2, 1, 0}, got, key)
	}
	for i, s := range specs[o.keyed() : o.keyed()+o.flow()] {
		require.Empty(t, s.OrderingKey, "the flow is plain")
		require.Empty(t, s.APIKey, "and the project's")
		require.Equal(t, orderingFlowPath, s.Path)
		require.Equal(t, t0.Add(time.Duration(i)*100*time.Millisecond), s.PostAt)
	}
	for i, s := range specs[o.keyed()+o.flow():] {
		require.Empty(t, s.OrderingKey, "the other flow is plain")
		require.Equal(t, "other-api-key", s.APIKey, "and the other project's")
		require.Equal(t, orderingOtherPath, s.Path)
		require.Equal(t, t0.Add(time.Duration(i)*500*time.Millisecond), s.PostAt)
	}
	_, keyed := o.place(o.keyed())
	require.False(t, keyed)

	hooks := make([]check.Hook, len(specs))
	for i, s := range specs {
		hooks[i] = check.Hook{ID: uuid.New(), PostAt: s.PostAt}
	}
	places, err := o.places(hooks)
	require.NoError(t, err)
	require.Len(t, places, o.keyed())
	require.Equal(t, check.Place{Key: 0, Seq: 3}, places[hooks[0].ID])

	real := o.receiver(hooks, "key", "other-key")
	require.Equal(t, "key", real.SigningKey)
	require.Equal(t, map[string]string{orderingOtherPath: "other-key"}, real.PathKeys)
	require.Equal(t, orderingKeyedPath, real.Routes[hooks[0].ID])
	require.Equal(t, orderingFlowPath, real.Routes[hooks[o.keyed()].ID])
	require.Equal(t, orderingOtherPath, real.Routes[hooks[o.keyed()+o.flow()].ID])

	hooks[0].PostAt = hooks[3].PostAt
	_, err = o.places(hooks)
	require.Error(t, err, "a key whose postAts do not ascend cannot be checked")
}
