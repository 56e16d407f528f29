package bus_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/testkit/natstest"
)

func TestCheckMaxPayload(t *testing.T) {
	t.Parallel()
	nc, _ := natstest.Start(t, natstest.Options{MaxPayload: bus.MinMaxPayload}).Connect(t)
	mp, err := bus.CheckMaxPayload(nc)
	require.NoError(t, err, "nats-server's default is enough")
	require.Equal(t, int64(bus.MinMaxPayload), mp)

	nc, _ = natstest.Start(t, natstest.Options{MaxPayload: 512 << 10}).Connect(t)
	_, err = bus.CheckMaxPayload(nc)
	require.ErrorContains(t, err, "max_payload 524288 bytes")
	require.ErrorContains(t, err, "raise max_payload in the nats-server configuration")
	require.ErrorContains(t, err, "SUNDIAL_MAX_DATA_BYTES")
}
