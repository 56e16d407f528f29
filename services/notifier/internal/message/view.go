package message

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/failclass"
)

// view is what every rendering says, worked out once so that the e-mail,
// the chat message and the HTML never disagree.
type view struct {
	Subject string
	// Headline is the first sentence of the body.
	Headline string
	// Details are further sentences (quota figures, what a test is).
	Details []string
	Items   []item
	// More counts the alerts of the group that are not listed.
	More        int
	ProjectName string
	ProjectLink string
	GroupID     string
}

// item is one listed hook.
type item struct {
	Endpoint string
	HookID   string
	Attempts int32
	Error    string
	Link     string
}

// build works out the view of m.
func (m Message) build() view {
	v := view{
		ProjectName: m.projectName(),
		GroupID:     m.GroupID.String(),
		ProjectLink: m.projectLink(),
	}
	alerts := m.listed()
	v.More = max(m.Total-len(alerts), 0)
	if m.Kind == KindHookFailed || m.Kind == KindEndpointRecovered || m.Kind == KindEndpointPaused {
		for _, a := range alerts {
			v.Items = append(v.Items, m.item(a))
		}
	}
	what := m.what(alerts)
	v.Subject = oneLine("[Sundial] " + v.ProjectName + ": " + what)
	v.Headline, v.Details = m.sentences(what, alerts)
	return v
}

// what is the subject's account of the group, after "[Sundial] project: ".
func (m Message) what(alerts []*eventv1.Alert) string {
	switch m.Kind {
	case KindHookFailed:
		return plural(m.total(), "hook", "hooks") + " failed" + m.endpointsPhrase(alerts)
	case KindEndpointRecovered:
		if len(alerts) == 0 {
			return "an endpoint recovered"
		}
		return endpoint(alerts[0]) + " recovered"
	case KindEndpointPaused:
		if len(alerts) == 0 {
			return "an endpoint paused"
		}
		return endpoint(alerts[0]) + " paused"
	case KindQuotaThreshold:
		if len(alerts) == 0 {
			return "hook quota threshold reached"
		}
		return strconv.Itoa(int(alerts[0].GetThresholdPercent())) + "% of the hook quota used"
	case KindChannelTest:
		return "test message"
	default:
		return plural(m.total(), "alert", "alerts")
	}
}

// endpointsPhrase names the endpoint the listed hooks failed on.
func (m Message) endpointsPhrase(alerts []*eventv1.Alert) string {
	if len(alerts) == 0 {
		return ""
	}
	first := endpoint(alerts[0])
	for _, a := range alerts[1:] {
		if endpoint(a) != first {
			return " on " + first + " and other endpoints"
		}
	}
	return " on " + first
}

// sentences are the headline and details of the body.
func (m Message) sentences(what string, alerts []*eventv1.Alert) (string, []string) {
	name := m.projectName()
	switch m.Kind {
	case KindHookFailed:
		return oneLine(name + ": " + what + ". Their retries ran out."), nil
	case KindEndpointRecovered:
		if len(alerts) > 0 && alerts[0].GetPath() == "" {
			// A domain's pause ended (docs/notifications.md).
			return oneLine(name + ": " + what + ": its pause ended and its hooks are delivered again."), nil
		}
		// The recovered alert's Attempts counts the hooks that ran out of
		// retries on the endpoint while it was failing.
		failed := "hooks to it failed"
		if len(alerts) > 0 && alerts[0].GetAttempts() > 0 {
			failed = plural(int(alerts[0].GetAttempts()), "hook", "hooks") + " to it failed"
		}
		return oneLine(name + ": " + what + ": a delivery to it succeeded again after " + failed + "."), nil
	case KindQuotaThreshold:
		if len(alerts) == 0 {
			return oneLine(name + ": " + what + "."), nil
		}
		a := alerts[0]
		detail := fmt.Sprintf("%d of %d hooks used this billing period", a.GetUsage(), a.GetQuota())
		if ps := a.GetPeriodStart(); ps != nil {
			detail += " (since " + ps.AsTime().UTC().Format("2006-01-02") + ")"
		}
		return oneLine(name + ": " + what + "."), []string{detail + "."}
	case KindEndpointPaused:
		if len(alerts) > 0 {
			if class := failclass.Word(alerts[0].GetFailureClass()); class != "" {
				return oneLine(name + ": " + what + ": the project's failure policy pauses it on " + class +
					" failures. Its hooks wait, without spending attempts, until it is resumed with POST /v1/endpoints/resume."), nil
			}
		}
		until := "its next probe"
		if len(alerts) > 0 && alerts[0].GetPausedUntil() != nil {
			until = alerts[0].GetPausedUntil().AsTime().UTC().Format(time.RFC3339)
		}
		return oneLine(name + ": " + what + ": its hooks wait, without spending attempts, until " + until +
			"; then one delivery probes it. Resume it early with POST /v1/endpoints/resume."), nil
	case KindChannelTest:
		return oneLine(name + ": test message from Sundial."),
			[]string{"This channel works: alerts about this project will arrive here."}
	default:
		return oneLine(name + ": " + what + "."), nil
	}
}

func (m Message) item(a *eventv1.Alert) item {
	it := item{
		Endpoint: oneLine(endpoint(a)),
		HookID:   oneLine(a.GetHookId()),
		Error:    oneLine(a.GetError()),
	}
	if class := failclass.Word(a.GetFailureClass()); class != "" && it.Error != "" && m.Kind == KindHookFailed {
		it.Error += " (failure class " + class + ")"
	}
	if m.Kind == KindHookFailed {
		// A recovered alert's Attempts is a count of failed hooks, said
		// in the headline instead.
		it.Attempts = a.GetAttempts()
	}
	if it.HookID != "" {
		it.Link = m.hookLink(it.HookID)
	}
	return it
}

// listed are the alerts a message names, at most MaxListed.
func (m Message) listed() []*eventv1.Alert {
	if len(m.Alerts) > MaxListed {
		return m.Alerts[:MaxListed]
	}
	return m.Alerts
}

// total is the group's size, never less than what is listed.
func (m Message) total() int { return max(m.Total, len(m.listed())) }

func (m Message) projectName() string {
	if name := oneLine(m.Project.Name); name != "" {
		return name
	}
	return m.Project.ID.String()
}

// link is a dashboard URL, empty when no dashboard URL is configured.
func (m Message) link(path string) string {
	base := strings.TrimRight(m.DashboardURL, "/")
	if base == "" {
		return ""
	}
	return base + path
}

// projectLink is the project's overview (docs/dashboard.md, "Routes").
func (m Message) projectLink() string {
	return m.link("/p/" + m.Project.ID.String())
}

// hookLink is a hook's page in the project (docs/dashboard.md, "Routes").
func (m Message) hookLink(hookID string) string {
	return m.link("/p/" + m.Project.ID.String() + "/hooks/" + url.PathEscape(hookID))
}

// endpoint is domain+path, the way the dashboard shows an endpoint.
func endpoint(a *eventv1.Alert) string {
	path := a.GetPath()
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return a.GetDomain() + path
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// oneLine replaces line breaks and other control characters with spaces:
// a name or an error must not start a new header line in an e-mail or a
// new paragraph in a chat message.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// timestamp formats t as RFC 3339 in UTC, like delivery bodies.
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
