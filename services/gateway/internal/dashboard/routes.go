package dashboard

import (
	"net/http"

	"github.com/sundial-run/sundial/services/gateway/internal/account"
)

// routes registers every route of the dashboard (docs/dashboard.md,
// "Routes"). Pages added later register here.
func (d *Dashboard) routes() {
	d.Public("GET /dashboard/static/", serveStatic)
	d.Public("GET /dashboard/signin", d.signinForm)
	d.Public("POST /dashboard/signin", d.signin)
	d.Public("GET /dashboard/set-password", d.setPasswordForm)
	d.Public("POST /dashboard/set-password", d.setPassword)
	d.Page("POST /dashboard/signout", d.signout)
	d.Page("POST /dashboard/signout-everywhere", d.signoutEverywhere)

	d.Page("GET /dashboard", d.projectList)
	d.Page("GET /dashboard/{$}", d.projectList)
	d.ProjectPage("GET /dashboard/p/{project}", d.overview)

	// Keys, settings, listeners, channels, sequences, with the create and
	// edit forms of the last two (owners only for keys: docs/dashboard.md),
	// and the held ordering keys.
	d.ProjectPage("GET /dashboard/p/{project}/keys", d.keys)
	d.ProjectAction("POST /dashboard/p/{project}/keys/api", account.Owner, d.createAPIKey)
	d.ProjectAction("POST /dashboard/p/{project}/keys/api/{id}/revoke", account.Owner, d.revokeAPIKey)
	d.ProjectAction("POST /dashboard/p/{project}/keys/signing/rotate", account.Owner, d.rotateSigningKey)
	d.ProjectAction("POST /dashboard/p/{project}/keys/signing/{id}/revoke", account.Owner, d.revokeSigningKey)
	d.ProjectPage("GET /dashboard/p/{project}/settings", d.settings)
	d.ProjectAction("POST /dashboard/p/{project}/settings", account.Member, d.saveSettings)
	d.ProjectPage("GET /dashboard/p/{project}/listeners", d.listeners)
	d.ProjectPage("GET /dashboard/p/{project}/channels", d.channels)
	d.ProjectPage("GET /dashboard/p/{project}/channels/new", d.newChannelForm)
	d.ProjectAction("POST /dashboard/p/{project}/channels", account.Member, d.createChannel)
	d.ProjectPage("GET /dashboard/p/{project}/channels/{id}/edit", d.editChannelForm)
	d.ProjectAction("POST /dashboard/p/{project}/channels/{id}", account.Member, d.updateChannel)
	d.ProjectAction("POST /dashboard/p/{project}/channels/{id}/test", account.Member, d.testChannel)
	d.ProjectPage("GET /dashboard/p/{project}/sequences", d.sequences)
	d.ProjectPage("GET /dashboard/p/{project}/sequences/new", d.newSequenceForm)
	d.ProjectAction("POST /dashboard/p/{project}/sequences", account.Member, d.createSequence)
	d.ProjectPage("GET /dashboard/p/{project}/sequences/{id}", d.sequence)
	d.ProjectPage("GET /dashboard/p/{project}/sequences/{id}/edit", d.editSequenceForm)
	d.ProjectAction("POST /dashboard/p/{project}/sequences/{id}", account.Member, d.replaceSequence)
	d.ProjectAction("POST /dashboard/p/{project}/sequences/{id}/{action}", account.Member, d.sequenceAction)
	d.ProjectPage("GET /dashboard/p/{project}/ordering-keys", d.orderingKeys)
	d.ProjectAction("POST /dashboard/p/{project}/ordering-keys/resume", account.Member, d.resumeOrderingKey)

	// Hooks: the list, its live tail, the create form and the test
	// delivery, a hook, its actions, bulk actions.
	d.ProjectPage("GET /dashboard/p/{project}/hooks", d.hooks)
	d.ProjectPage("GET /dashboard/p/{project}/hooks/tail", d.hooksTail)
	d.ProjectPage("GET /dashboard/p/{project}/hooks/new", d.newHookForm)
	d.ProjectAction("POST /dashboard/p/{project}/hooks", account.Member, d.createHook)
	d.ProjectAction("POST /dashboard/p/{project}/hooks/test", account.Member, d.sendTestDelivery)
	d.ProjectPage("GET /dashboard/p/{project}/hooks/{id}", d.hookDetail)
	d.ProjectAction("POST /dashboard/p/{project}/hooks/{id}/{action}", account.Member, d.hookAction)
	d.ProjectAction("POST /dashboard/p/{project}/bulk/{action}", account.Member, d.bulkAction)
	// Bulk jobs: the list, and a running job's cancel.
	d.ProjectPage("GET /dashboard/p/{project}/bulk-jobs", d.bulkJobs)
	d.ProjectAction("POST /dashboard/p/{project}/bulk-jobs/{id}/cancel", account.Member, d.cancelBulkJob)

	// Anything else under /dashboard: the errors page, not the mux's text.
	d.Public("/dashboard/", func(w http.ResponseWriter, r *http.Request) {
		Error(w, r, http.StatusNotFound, "There is no such page.")
	})
}
