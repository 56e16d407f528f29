package dashboard

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/sundial-run/sundial/pkg/failclass"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/pkg/signing"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
)

// settingsPage is the data of settings.html. Errors are by the API's field
// name (the form's input names are the same), for the message next to
// each field.
type settingsPage struct {
	Settings   project.Settings
	Schemes    []signing.SignatureScheme
	Strategies []string
	// Failures are the failure policy's choices, one per class.
	Failures []failureChoice
	// OrderingOnFailures are orderingOnFailure's choices.
	OrderingOnFailures []string
	Errors             map[string]string
}

// failureChoice is one failure class's action and the actions it may take.
type failureChoice struct {
	Class, Action string
	Actions       []string
}

// failureChoices are the choices of every class, in the enum's order.
func failureChoices(p failclass.Policy) []failureChoice {
	actions := p.Effective()
	out := make([]failureChoice, 0, len(actions))
	for _, class := range failclass.Words() {
		c := failureChoice{Class: class, Action: actions[class], Actions: []string{string(failclass.Retry), string(failclass.Fail)}}
		if failclass.Pausable(class) {
			c.Actions = append(c.Actions, string(failclass.Pause))
		}
		out = append(out, c)
	}
	return out
}

// settings is GET /dashboard/p/{project}/settings.
func (d *Dashboard) settings(w http.ResponseWriter, r *http.Request) {
	d.renderSettings(w, r, http.StatusOK, nil)
}

func (d *Dashboard) renderSettings(w http.ResponseWriter, r *http.Request, status int, problems map[string]string) {
	p, _ := ProjectFrom(r)
	s, err := d.Admin.Project.Get(r.Context(), p.ID)
	if err != nil {
		d.fault(w, r, "project settings", err)
		return
	}
	RenderStatus(w, r, status, "settings.html", settingsPage{
		Settings: s, Schemes: signing.SignatureSchemes, Errors: problems,
		Strategies: []string{retry.StrategyFixed, retry.StrategyExponential},
		Failures:   failureChoices(s.FailurePolicy), OrderingOnFailures: project.OrderingOnFailures,
	})
}

// saveSettings is POST /dashboard/p/{project}/settings (members and
// owners): the fields the form sends change, the others stay (as PATCH
// /v1/project), through project.Service.Update, which checks them as it
// does for the API.
func (d *Dashboard) saveSettings(w http.ResponseWriter, r *http.Request) {
	p, _ := ProjectFrom(r)
	patch, problems := settingsPatch(r)
	if len(problems) > 0 {
		d.renderSettings(w, r, http.StatusBadRequest, problems)
		return
	}
	_, err := d.Admin.Project.Update(r.Context(), p.ID, patch)
	var invalid *project.InvalidSettingsError
	switch {
	case errors.As(err, &invalid):
		problems = make(map[string]string, len(invalid.Problems))
		for _, pr := range invalid.Problems {
			addProblem(problems, pr.Field, pr.Message)
		}
		d.renderSettings(w, r, http.StatusBadRequest, problems)
	case err != nil:
		d.fault(w, r, "update project settings", err)
	default:
		d.Log.Info("dashboard project settings changed", "project_id", p.ID, "user_id", sessionFrom(r).user.ID)
		http.Redirect(w, r, Prefix+"/p/"+p.ID.String()+"/settings", http.StatusSeeOther)
	}
}

// addProblem records a message under its form field: an element of a list
// ("alerts.ownerEmails[2]") is shown next to the list, with its name.
func addProblem(problems map[string]string, field, message string) {
	key := field
	if i := strings.IndexByte(field, '['); i >= 0 {
		key = field[:i]
		message = field[i:] + ": " + message
	}
	if prev, ok := problems[key]; ok {
		message = prev + "; " + message
	}
	problems[key] = message
}

// settingsPatch reads the form into a change: a field the form does not
// send is left alone. Values that are not numbers are problems here; the
// rest is project.Service's to check.
func settingsPatch(r *http.Request) (project.Patch, map[string]string) {
	f := formReader{r: r, problems: map[string]string{}}
	var p project.Patch
	p.Name = f.text("name")
	p.Domain = f.text("domain")
	p.AsyncTimeoutSecs = f.integer("asyncTimeoutSecs")
	p.SignatureScheme = f.text("signatureScheme")
	p.RetentionDays = f.integer("retentionDays")
	if f.has("maxConcurrency") && strings.TrimSpace(r.PostFormValue("maxConcurrency")) == "" {
		p.MaxConcurrency = project.Null[int]()
	} else {
		p.MaxConcurrency = f.integer("maxConcurrency")
	}
	// Write-only: an empty field keeps the header, the box removes it.
	if r.PostFormValue("authorizationHeader.clear") == "on" {
		p.AuthorizationHeader = project.Null[string]()
	} else if v := r.PostFormValue("authorizationHeader"); v != "" {
		p.AuthorizationHeader = project.Value(v)
	}
	rp := project.RetryPolicyPatch{
		MinRetries: f.integer("retryPolicy.minRetries"), DelaySecs: f.integer("retryPolicy.delaySecs"),
		Strategy: f.text("retryPolicy.strategy"), BackoffFactor: f.number("retryPolicy.backoffFactor"),
		MaxDelaySecs: f.integer("retryPolicy.maxDelaySecs"), Jitter: f.boolean("retryPolicy.jitter"),
	}
	if rp != (project.RetryPolicyPatch{}) {
		p.RetryPolicy = project.Value(rp)
	}
	alerts := project.AlertsPatch{
		GroupWaitSecs: f.integer("alerts.groupWaitSecs"), FollowUpMinSecs: f.integer("alerts.followUpMinSecs"),
		FollowUpMaxSecs: f.integer("alerts.followUpMaxSecs"),
	}
	if f.has("alerts.ownerEmails") {
		alerts.OwnerEmails = project.Value(strings.Fields(strings.ReplaceAll(r.PostFormValue("alerts.ownerEmails"), ",", " ")))
	}
	if alerts.GroupWaitSecs.Set || alerts.FollowUpMinSecs.Set || alerts.FollowUpMaxSecs.Set || alerts.OwnerEmails.Set {
		p.Alerts = project.Value(alerts)
	}
	p.FailurePolicy = failurePolicyField(f)
	p.OrderingOnFailure = f.text("orderingOnFailure")
	return p, f.problems
}

// failurePolicyField is the classes the form sends (failurePolicy.<class>)
// with their actions; left out when it sends none.
func failurePolicyField(f formReader) project.Field[map[string]string] {
	set := map[string]string{}
	for _, class := range failclass.Words() {
		if v := f.text("failurePolicy." + class); v.Set {
			set[class] = v.Value
		}
	}
	if len(set) == 0 {
		return project.Field[map[string]string]{}
	}
	return project.Value(set)
}

// formReader reads typed form fields, recording a problem per field that
// does not parse.
type formReader struct {
	r        *http.Request
	problems map[string]string
}

func (f formReader) has(name string) bool {
	_ = f.r.ParseForm()
	_, ok := f.r.PostForm[name]
	return ok
}

func (f formReader) text(name string) project.Field[string] {
	if !f.has(name) {
		return project.Field[string]{}
	}
	return project.Value(f.r.PostFormValue(name))
}

func (f formReader) integer(name string) project.Field[int] {
	if !f.has(name) {
		return project.Field[int]{}
	}
	v, err := strconv.Atoi(strings.TrimSpace(f.r.PostFormValue(name)))
	if err != nil {
		f.problems[name] = "must be a whole number"
	}
	return project.Value(v)
}

func (f formReader) number(name string) project.Field[float64] {
	if !f.has(name) {
		return project.Field[float64]{}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(f.r.PostFormValue(name)), 64)
	if err != nil {
		f.problems[name] = "must be a number"
	}
	return project.Value(v)
}

func (f formReader) boolean(name string) project.Field[bool] {
	if !f.has(name) {
		return project.Field[bool]{}
	}
	v, err := strconv.ParseBool(f.r.PostFormValue(name))
	if err != nil {
		f.problems[name] = "must be true or false"
	}
	return project.Value(v)
}
