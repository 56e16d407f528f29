package quota_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/services/gateway/internal/storetest"
)

func (b bundle) alerts() []storetest.ListAlertsForTestRow {
	b.t.Helper()
	rows, err := storetest.New(b.pool).ListAlertsForTest(b.ctx, b.project)
	require.NoError(b.t, err)
	return rows
}

func TestAClaimStoresItsAlertInTheSameTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t, 4, 200) // 75 % = 3 hooks, 100 % = 4
	_, err := b.add(2)
	require.NoError(t, err)
	require.Empty(t, b.alerts())

	charge, err := b.add(2)
	require.NoError(t, err)
	require.Equal(t, []int32{75, 100}, percents(charge.Crossed))
	rows := map[string]storetest.ListAlertsForTestRow{}
	for _, row := range b.alerts() {
		rows[row.ID] = row
	}
	require.Len(t, rows, 2)
	for _, c := range charge.Crossed {
		row, ok := rows[c.AlertID()]
		require.True(t, ok, c.AlertID())
		require.Equal(t, quota.AlertKind, row.Kind)
		require.True(t, c.At.Equal(row.OccurredAt))
		require.Nil(t, row.GroupID, "for the notifier to take in")
		var body eventv1.Alert
		require.NoError(t, proto.Unmarshal(row.Body, &body))
		require.True(t, proto.Equal(c.Alert(), &body), "the body is the event")
	}
}

func TestARolledBackClaimStoresNoAlert(t *testing.T) {
	t.Parallel()
	b := setup(t, 4, 200)
	err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		charge, err := quota.Add(b.ctx, store.New(tx), b.project, 3)
		require.NoError(t, err)
		require.Len(t, charge.Crossed, 1)
		return errRollBack
	})
	require.ErrorIs(t, err, errRollBack)
	require.Empty(t, b.alerts())
}
