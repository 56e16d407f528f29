package batchratio_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/scheduler/internal/batchratio"
)

func TestRatioReadsMessagesAsItems(t *testing.T) {
	t.Parallel()
	var r batchratio.Ratio
	require.Equal(t, 7, r.ItemsIn(7), "nothing counted yet: a message is an item")

	r.Count(2, 20)
	require.Equal(t, 30, r.ItemsIn(3))
	// A message of no items still counts as one.
	r.Count(2, 0)
	require.Equal(t, 33, r.ItemsIn(6), "22 items in 4 messages")
}

func TestRatioFollowsRecentMessages(t *testing.T) {
	t.Parallel()
	var r batchratio.Ratio
	r.Count(1000, 100000)
	for range 60 {
		r.Count(100, 100)
	}
	// Halving whenever the sums pass the span lets single-item messages
	// take over from the early batches of 100.
	require.Less(t, r.ItemsIn(100), 110)
}

func TestNilRatioCountsMessages(t *testing.T) {
	t.Parallel()
	var r *batchratio.Ratio
	r.Count(1, 50)
	require.Equal(t, 4, r.ItemsIn(4))
}
