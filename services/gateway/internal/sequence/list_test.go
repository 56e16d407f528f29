package sequence

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTotalsAreCappedLikeTheHooksList(t *testing.T) {
	t.Parallel()
	require.Equal(t, Total{TotalItems: 7}, totalOf(7))
	require.Equal(t, Total{TotalItems: maxCount}, totalOf(maxCount))
	require.Equal(t, Total{TotalItems: maxCount, Capped: true}, totalOf(maxCount+1))
}
