package broker

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

type bundle struct {
	ctx      context.Context
	storeDir string
}

func setup(t *testing.T) bundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return bundle{ctx: ctx, storeDir: t.TempDir()}
}

func (b bundle) start(t *testing.T, port int) *Server {
	t.Helper()
	srv, err := Start(Options{StoreDir: b.storeDir, Port: port})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	return srv
}

func connect(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}

func TestTakenPortMovesToTheNextFreeOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { taken.Close() })
	takenPort := taken.Addr().(*net.TCPAddr).Port

	srv := b.start(t, takenPort)

	require.NotEqual(t, "nats://127.0.0.1:"+strconv.Itoa(takenPort), srv.URL)
	info, err := connect(t, srv.URL).AccountInfo(b.ctx)
	require.NoError(t, err, "JetStream must be enabled")
	require.NotNil(t, info)
}

func TestStreamsSurviveARestart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, err := Start(Options{StoreDir: b.storeDir})
	require.NoError(t, err)
	js := connect(t, first.URL)
	_, err = js.CreateStream(b.ctx, jetstream.StreamConfig{Name: "KEPT", Subjects: []string{"kept"}})
	require.NoError(t, err)
	_, err = js.Publish(b.ctx, "kept", []byte("hello"))
	require.NoError(t, err)
	first.Shutdown()

	second := b.start(t, 0)

	stream, err := connect(t, second.URL).Stream(b.ctx, "KEPT")
	require.NoError(t, err)
	msg, err := stream.GetLastMsgForSubject(b.ctx, "kept")
	require.NoError(t, err)
	require.Equal(t, "hello", string(msg.Data))
}

func TestLargePayloadsFit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := b.start(t, 0)
	nc, err := nats.Connect(srv.URL)
	require.NoError(t, err)
	t.Cleanup(nc.Close)

	require.Equal(t, int64(8<<20), nc.MaxPayload())
}
