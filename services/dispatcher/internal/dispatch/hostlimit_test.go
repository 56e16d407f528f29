package dispatch_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
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

// handlerWith returns a handler of cfg, its credentials, sender,
// hand-back publisher, log and (unless set) result publisher filled in.
func (b bundle) handlerWith(t *testing.T, cfg dispatch.Config) *dispatch.Handler {
	cfg.Credentials = credential.NewCache(credential.NewStore(b.pool, secrettest.Keyring()), time.Minute, 100)
	cfg.Sender = b.client
	cfg.HandBack = bus.Retrying{Publisher: bus.NewPublisher(b.js)}
	if cfg.Results == nil {
		cfg.Results = runReporter(t, sender(b.js, report.DefaultRetry))
	}
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	return dispatch.NewHandler(cfg)
}

func TestHandleDefersAHookWhoseHostIsBusy(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	hosts := hostlimit.New(hostlimit.Config{Ceiling: 1})
	h := b.limitedHandler(t, hosts)
	due := b.dueHook(t, fixture.Project{ActiveKey: "k"})
	key := hostlimit.Key{Project: due.GetProjectId(), Host: hostlimit.Host(due.GetUrl())}
	busy, _ := hosts.Acquire(context.Background(), key, 0, 0)
	require.NotNil(t, busy)

	// Done with (acknowledged): the hook goes back to the scheduler as a
	// deferred result, nothing sent, and not to JetStream.
	d := fixture.Due(t, due)
	d.NumDelivered = 3
	err := h.Handle(context.Background(), d)
	require.NoError(t, err)
	require.Empty(t, b.receiver.Received())
	last := fixture.LastResult(t, b.js)
	require.NotNil(t, last)
	requireDeferred(t, due, last.AttemptResult)

	// Once the host has a free slot the same hook is delivered, and the
	// slot is given back afterwards.
	busy.Done(hostlimit.Sample{})
	require.NoError(t, b.handle(t, h, due))
	require.Len(t, b.receiver.Received(), 1)
	require.Zero(t, hosts.HostInFlight(key.Host), "the delivery gave its host slot back")
	require.Equal(t, 1, hosts.Flow(key).Limit, "never above the ceiling")
}

// TestHandleWaitsForAFlowSlotThatFreesSoon: a hook whose flow is at its
// limit, behind a delivery the receiver answers in 300 ms, waits in memory
// for that slot and is delivered, rather than deferred: a deferral costs a
// result, a claim and a due message, about what the delivery itself costs.
func TestHandleWaitsForAFlowSlotThatFreesSoon(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
	})
	hosts := hostlimit.New(hostlimit.Config{Ceiling: 1})
	h := b.limitedHandler(t, hosts)
	hooks, _ := b.batch(t, 2)
	first, second := hooks[0], hooks[1]
	key := hostlimit.Key{Project: first.GetProjectId(), Host: hostlimit.Host(first.GetUrl())}

	done := make(chan error, 1)
	go func() { done <- b.handle(t, h, first) }()
	require.Eventually(t, func() bool { return hosts.Flow(key).InFlight == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, b.handle(t, h, second))
	require.NoError(t, <-done)

	require.Len(t, b.receiver.Received(), 2, "the second hook waited for the first's slot")
	last := fixture.LastResult(t, b.js)
	require.NotNil(t, last)
	require.Equal(t, second.GetHookId(), last.GetHookId())
	require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, last.GetOutcome())
}

func TestHandleSkipsAnExpiredLeaseEvenWhenTheHostIsBusy(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	hosts := hostlimit.New(hostlimit.Config{Ceiling: 1})
	h := b.limitedHandler(t, hosts)
	due := b.dueHook(t, fixture.Project{ActiveKey: "k"})
	due.LeaseExpiresAt = timestamppb.New(time.Now().Add(-time.Second))
	busy, _ := hosts.Acquire(context.Background(), hostlimit.Key{Project: due.GetProjectId(), Host: hostlimit.Host(due.GetUrl())}, 0, 0)
	require.NotNil(t, busy)
	defer busy.Done(hostlimit.Sample{})

	// Acknowledged, nothing reported: the scheduler re-drives it.
	require.NoError(t, b.handle(t, h, due))
	require.Empty(t, b.receiver.Received())
	require.Nil(t, fixture.LastResult(t, b.js))
}

func TestHandleDefersAHookWhoseLeaseIsTooShortToDeliver(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	h := b.handlerWith(t, dispatch.Config{DeliveryTimeout: 10 * time.Second})
	due := b.dueHook(t, fixture.Project{ActiveKey: "k"})
	due.LeaseExpiresAt = timestamppb.New(time.Now().Add(3 * time.Second))
	due.LeaseDuration = durationpb.New(30 * time.Second)

	// 3 s left of a 30 s lease, a delivery may take 12: given back to the
	// scheduler now instead of being re-driven, later, as a loss.
	require.NoError(t, b.handle(t, h, due))
	require.Empty(t, b.receiver.Received())
	last := fixture.LastResult(t, b.js)
	require.NotNil(t, last)
	requireDeferred(t, due, last.AttemptResult)
}

func TestHandleGivesTheHostSlotBackWhenTheProjectIsGone(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	hosts := hostlimit.New(hostlimit.Config{Ceiling: 1})
	h := b.limitedHandler(t, hosts)
	due := b.dueHook(t, fixture.Project{ActiveKey: "k"})
	due.ProjectId = "00000000-0000-0000-0000-000000000001"
	require.NoError(t, b.handle(t, h, due))
	require.Zero(t, hosts.HostInFlight(hostlimit.Host(due.GetUrl())))
}

func TestHandleDefersOverTheProjectsCap(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	hosts := hostlimit.New(hostlimit.Config{Ceiling: 10})
	h := b.limitedHandler(t, hosts)
	due := b.dueHook(t, fixture.Project{ActiveKey: "k", MaxConcurrency: 1})
	key := hostlimit.Key{Project: due.GetProjectId(), Host: hostlimit.Host(due.GetUrl())}
	busy, _ := hosts.Acquire(context.Background(), key, 0, 0)
	require.NotNil(t, busy)
	defer busy.Done(hostlimit.Sample{})

	// The host has room, the project's cap of 1 has not.
	require.NoError(t, b.handle(t, h, due))
	require.Empty(t, b.receiver.Received())
	last := fixture.LastResult(t, b.js)
	require.NotNil(t, last)
	requireDeferred(t, due, last.AttemptResult)
	require.Equal(t, 1, hosts.Flow(key).Limit)
}

func TestHandleTeachesTheFlowsLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		want   int
	}{
		{"an answer grows it", http.StatusOK, hostlimit.DefaultInitial + 1},
		{"a 4xx is an answer", http.StatusNotFound, hostlimit.DefaultInitial + 1},
		{"a 500 is an answer about its payload", http.StatusInternalServerError, hostlimit.DefaultInitial + 1},
		{"a 503 halves it", http.StatusServiceUnavailable, hostlimit.DefaultInitial / 2},
		{"a 429 halves it", http.StatusTooManyRequests, hostlimit.DefaultInitial / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(tc.status) })
			hosts := hostlimit.New(hostlimit.Config{Ceiling: 256})
			h := b.limitedHandler(t, hosts)
			due := b.dueHook(t, fixture.Project{ActiveKey: "k"})
			key := hostlimit.Key{Project: due.GetProjectId(), Host: hostlimit.Host(due.GetUrl())}
			// Hold half the limit, so the flow counts as using it.
			var held []*hostlimit.Slot
			for range hostlimit.DefaultInitial/2 - 1 {
				s, _ := hosts.Acquire(context.Background(), key, 0, 0)
				require.NotNil(t, s)
				held = append(held, s)
			}
			require.NoError(t, b.handle(t, h, due))
			require.Len(t, b.receiver.Received(), 1)
			require.Equal(t, tc.want, hosts.Flow(key).Limit)
			for _, s := range held {
				s.Done(hostlimit.Sample{})
			}
		})
	}
}
