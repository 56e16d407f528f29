package result_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/services/scheduler/internal/storetest"
)

// sentHeaders and answerHeaders are a delivery's recorded headers as a
// dispatcher reports them.
func sentHeaders() *eventv1.Headers {
	return &eventv1.Headers{Fields: []*eventv1.HeaderField{
		{Name: "Authorization", Values: []string{"[redacted]"}},
		{Name: "Content-Type", Values: []string{"application/json"}},
		{Name: "Sundial-Ack-URL", Values: []string{"https://sundial.example.com/v1/async/h/7/[redacted]/ack"}},
	}}
}

func answerHeaders() *eventv1.Headers {
	return &eventv1.Headers{Fields: []*eventv1.HeaderField{
		{Name: "Set-Cookie", Values: []string{"a=[redacted]", "b=[redacted]"}},
		{Name: "X-Nul", Values: []string{"nul\x00byte"}},
		{Name: "X-Twice", Values: []string{"one"}},
		{Name: "X-Twice", Values: []string{"two"}},
	}, Omitted: 3}
}

const (
	sentJSON   = `{"Authorization": ["[redacted]"], "Content-Type": ["application/json"], "Sundial-Ack-URL": ["https://sundial.example.com/v1/async/h/7/[redacted]/ack"]}`
	answerJSON = `{"Set-Cookie": ["a=[redacted]", "b=[redacted]"], "X-Nul": ["nulbyte"], "X-Twice": ["one", "two"]}`
)

// TestAttemptsRecordTheirHeaders: the attempts of one message, applied in
// one batch, keep the headers their results carry (a name sent twice kept
// once with both values, a NUL byte taken out, the lines the bounds left
// out counted); a result without headers (no answer, or a dispatcher of an
// earlier release) records none.
func TestAttemptsRecordTheirHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	withHeaders := b.leased(t, fixed30, time.Minute)
	without := b.leased(t, fixed30, time.Minute)
	r := resultFor(withHeaders, eventv1.Outcome_OUTCOME_FAILURE, 500, "HTTP 500")
	r.RequestHeaders, r.ResponseHeaders = sentHeaders(), answerHeaders()
	bare := resultFor(without, eventv1.Outcome_OUTCOME_FAILURE, 0, "timeout after 10s")
	require.NoError(t, b.batcher.Handle(context.Background(), resultsDelivery(t, nil, r, bare)))

	a := fixture.Attempts(t, b.q, withHeaders.ID)[0]
	require.JSONEq(t, sentJSON, string(a.RequestHeaders))
	require.JSONEq(t, answerJSON, string(a.ResponseHeaders))
	require.Zero(t, a.RequestHeadersOmitted)
	require.EqualValues(t, 3, a.ResponseHeadersOmitted)

	a = fixture.Attempts(t, b.q, without.ID)[0]
	require.Equal(t, "failure", a.Outcome)
	require.Nil(t, a.RequestHeaders)
	require.Nil(t, a.ResponseHeaders)
	require.Zero(t, a.ResponseHeadersOmitted)
}

// TestAsyncAttemptsRecordTheirHeaders: a 202's attempt keeps its headers
// while it waits; one the receiver answered before the 202 was applied
// (the gateway recorded it, knowing nothing of the exchange) gets them, its
// duration and its excerpt from the 202.
func TestAsyncAttemptsRecordTheirHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	accept := func(hook storetest.Hook) {
		r := resultFor(hook, eventv1.Outcome_OUTCOME_ASYNC, 202, "")
		r.RequestHeaders, r.ResponseHeaders = sentHeaders(), answerHeaders()
		require.NoError(t, b.handle(t, r))
	}

	waiting := b.leased(t, fixed30, time.Minute)
	accept(waiting)
	a := fixture.Attempts(t, b.q, waiting.ID)[0]
	require.Equal(t, "waiting", *a.AsyncState)
	require.JSONEq(t, sentJSON, string(a.RequestHeaders))
	require.JSONEq(t, answerJSON, string(a.ResponseHeaders))
	require.EqualValues(t, 3, a.ResponseHeadersOmitted)

	answered := b.leased(t, fixed30, time.Minute)
	b.answerFirst(t, answered, "acked")
	accept(answered)
	require.Equal(t, "completed", fixture.Get(t, b.q, answered.ID).Status)
	a = fixture.Attempts(t, b.q, answered.ID)[0]
	require.Equal(t, "acked", *a.AsyncState)
	require.JSONEq(t, sentJSON, string(a.RequestHeaders))
	require.JSONEq(t, answerJSON, string(a.ResponseHeaders))
	require.EqualValues(t, 3, a.ResponseHeadersOmitted)
	require.InDelta(t, 1.5, a.DurationSeconds, 1e-9)
	require.Equal(t, "ok then", *a.ResponseExcerpt)
}
