package dispatch_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/services/dispatcher/internal/credential"
	"github.com/sundial-run/sundial/services/dispatcher/internal/dispatch"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
	"github.com/sundial-run/sundial/services/dispatcher/internal/report"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func (b bundle) limitedHandler(t *testing.T, hosts *hostlimit.Limiter) *dispatch.Handler {
	return b.handlerWith(t, dispatch.Config{Hosts: hosts})
}

// handlerWith returns a handler of cfg, its credentials, sender, result
// and hand-back publishers and log filled in.
func (b bundle) handlerWith(t *testing.T, cfg dispatch.Config) *dispatch.Handler {
	cfg.Credentials = credential.NewCache(credential.NewStore(b.pool, secrettest.Keyring()), time.Minute, 100)
	cfg.Sender = b.client
	cfg.HandBack = bus.Retrying{Publisher: bus.NewPublisher(b.js)}
	cfg.Results = runReporter(t, sender(b.js, report.DefaultRetry))
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	return dispatch.NewHandler(cfg)
}

func TestHandleHandsBackAHookWhoseHostIsBusy(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	hosts := hostlimit.New(1)
	h := b.limitedHandler(t, hosts)
	due := b.dueHook(t, fixture.Project{ActiveKey: "k"})
	busy, ok := hosts.TryAcquire(hostlimit.Key(due.GetUrl()))
	require.True(t, ok)

	err := h.Handle(context.Background(), bus.Delivery{Subject: event.SubjectDue, Data: fixture.Encode(t, due), NumDelivered: 3})
	require.ErrorContains(t, err, "destination host at its concurrency limit")
	require.Empty(t, b.receiver.Received())
	require.Nil(t, fixture.LastResult(t, b.js))

	// Once the host has a free slot the same message is delivered, and the
	// slot is given back afterwards.
	busy()
	require.NoError(t, b.handle(t, h, due))
	require.Len(t, b.receiver.Received(), 1)
	release, ok := hosts.TryAcquire(hostlimit.Key(due.GetUrl()))
	require.True(t, ok, "the delivery kept its host slot")
	release()
}

func TestHandleSkipsAnExpiredLeaseEvenWhenTheHostIsBusy(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	hosts := hostlimit.New(1)
	h := b.limitedHandler(t, hosts)
	due := b.dueHook(t, fixture.Project{ActiveKey: "k"})
	due.LeaseExpiresAt = timestamppb.New(time.Now().Add(-time.Second))
	busy, ok := hosts.TryAcquire(hostlimit.Key(due.GetUrl()))
	require.True(t, ok)
	defer busy()

	// Acknowledged, not handed back again: the scheduler re-drives it.
	require.NoError(t, b.handle(t, h, due))
	require.Empty(t, b.receiver.Received())
}

func TestHandleGivesTheHostSlotBackWhenTheProjectIsGone(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	hosts := hostlimit.New(1)
	h := b.limitedHandler(t, hosts)
	due := b.dueHook(t, fixture.Project{ActiveKey: "k"})
	due.ProjectId = "00000000-0000-0000-0000-000000000001"
	require.NoError(t, b.handle(t, h, due))
	release, ok := hosts.TryAcquire(hostlimit.Key(due.GetUrl()))
	require.True(t, ok)
	release()
}
