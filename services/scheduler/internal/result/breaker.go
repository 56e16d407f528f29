package result

import (
	"context"
	"fmt"
	"net/http"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/failclass"

	"github.com/sundial-run/sundial/services/scheduler/internal/breaker"
	"github.com/sundial-run/sundial/services/scheduler/internal/outbox"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Circuit breakers (package breaker, docs/security.md "Circuit breaker and
// Retry-After"): the transaction that applies a batch of delivery results
// also moves the breakers of their endpoints, so that a pause, its reason
// and its alert exist exactly when the results that caused them do.

// SetBreakerPolicy replaces the breaker policy (breaker.DefaultPolicy
// until then); call it before the applier is used.
func (a *Applier) SetBreakerPolicy(p breaker.Policy) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("breaker policy: %w", err)
	}
	a.breaker = p
	return nil
}

// recordBreakers moves the breakers of the units the batch's applied
// delivery results went to, and writes the alerts that raises; each alert
// is published after the commit with the first result of its unit.
func (a *Applier) recordBreakers(ctx context.Context, q *store.Queries, ins []attempt, plan batchPlan, outs []*applied) error {
	outcomes := map[breaker.Unit][]breaker.Outcome{}
	first := map[breaker.Unit]int{}
	for i, in := range ins {
		h, ok := plan.hooks[i]
		if !ok || outs[i] == nil {
			continue
		}
		o, ok := breakerOutcome(in, *outs[i])
		if !ok {
			continue
		}
		o.Path = h.path
		u := breaker.Unit{ProjectID: h.projectID, Domain: h.domain}
		if _, seen := first[u]; !seen {
			first[u] = i
		}
		outcomes[u] = append(outcomes[u], o)
	}
	alerts, err := a.breaker.Record(ctx, q, outcomes)
	if err != nil || len(alerts) == 0 {
		return err
	}
	for _, al := range alerts {
		for u, i := range first {
			if u.ProjectID.String() == al.GetProjectId() && u.Domain == al.GetDomain() {
				outs[i].alerts = append(outs[i].alerts, al)
				break
			}
		}
	}
	return outbox.Insert(ctx, q, alerts)
}

// breakerOutcome is what a delivery result says of its server: failing
// when there was no answer, a 429 or a 5xx; healthy for any other answer,
// a 202 included. Results that are not a delivery's answer say nothing:
// neither the claim's record of an attempt whose leases all expired (no
// exchange: a dispatcher crashed, not the receiver) nor anything but a
// success, a 202 or a failure; unless the project's failure policy pauses
// the endpoint for the failure (out.pause), whatever it was.
func breakerOutcome(in attempt, out applied) (breaker.Outcome, bool) {
	if out.pause {
		return breaker.Outcome{HookID: in.hookID, Failing: true, Error: in.errText,
			PauseClass: failclass.Word(in.class)}, true
	}
	switch in.reported {
	case "success", "async":
		return breaker.Outcome{HookID: in.hookID}, true
	case "failure":
		if !in.exchanged || event.IsListenerFailure(in.errText) {
			// A listener's nack or ack timeout went nowhere near the
			// domain (docs/listener.md, "Routing").
			return breaker.Outcome{}, false
		}
		code := in.statusCode
		failing := code == 0 || code == http.StatusTooManyRequests || code >= 500
		return breaker.Outcome{HookID: in.hookID, Failing: failing, Error: in.errText, RetryAfter: in.retryAfter}, true
	}
	return breaker.Outcome{}, false
}
