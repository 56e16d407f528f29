package browser

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestCreate covers the create and edit forms: a hook, a test delivery, a
// sequence and a channel, each first refused with the problem next to its
// field, then made, and seen working (delivered, planned, sent). The
// subtests share the services, each in its own tab.
func TestCreate(t *testing.T) {
	t.Parallel()
	b := setup(t, options{delivery: true, notifier: true})
	t.Run("hook-form", func(t *testing.T) {
		t.Parallel()
		createHook(t, b)
	})
	t.Run("test-delivery", func(t *testing.T) {
		t.Parallel()
		sendTestDelivery(t, b)
	})
	t.Run("sequence-create-edit", func(t *testing.T) {
		t.Parallel()
		createAndEditSequence(t, b)
	})
	t.Run("channel-create-edit", func(t *testing.T) {
		t.Parallel()
		createAndEditChannel(t, b)
	})
}

// visible says whether the first element matching sel is shown (the forms
// show the fields of the choice made only).
func visible(tb *tab, sel string) bool {
	tb.t.Helper()
	return eval[bool](tb, `(() => { const e = document.querySelector(`+"`"+sel+"`"+`); return e !== null && e.checkVisibility(); })()`)
}

// fieldError is the problem shown after the form field sel.
func fieldError(tb *tab, sel string) string {
	tb.t.Helper()
	return eval[string](tb, `(() => { let e = document.querySelector(`+"`"+sel+"`"+`);
		while (e && !(e.matches("p.error"))) e = e.nextElementSibling;
		return e ? e.textContent.trim() : ""; })()`)
}

// selectValue chooses the option of a select.
func (tb *tab) selectValue(sel, v string) {
	tb.t.Helper()
	tb.do("select "+v+" in "+sel, chromedp.SetValue(chromedp.CSS(sel), v))
}

// followedToAttempt waits on the page of a hook just created (the address
// the form sent the tab to) until its first attempt shows, and returns
// the hook's id. With following, the hook has no attempt yet when the page
// shows, which then follows it: the attempt shows without a reload.
func followedToAttempt(tb *tab, b *bundle, outcome string, following bool) string {
	tb.t.Helper()
	tb.waitText("#created", "Scheduled")
	if following {
		require.True(tb.t, eval[bool](tb, `(() => { window.sundialSamePage = true;
			return document.querySelector("#created").hasAttribute("hx-get") && document.querySelectorAll("`+attemptRows+` time").length === 0; })()`),
			"the page follows a hook due soon that has no attempt yet")
	}
	path := tb.path()
	prefix := b.hookPath("")
	require.True(tb.t, strings.HasPrefix(path, prefix), path)
	id := strings.TrimSuffix(strings.TrimPrefix(path, prefix), "?created=1")
	tb.waitText(attemptRows+" td:nth-child(4)", outcome)
	tb.shot("attempt-shown")
	if following {
		require.True(tb.t, eval[bool](tb, `window.sundialSamePage === true`), "the attempt shows without a reload")
		require.False(tb.t, eval[bool](tb, `document.querySelector("#created").hasAttribute("hx-get")`), "the page stops following once it shows")
	}
	require.True(tb.t, eval[bool](tb, `Array.from(document.querySelectorAll("time[datetime]")).every(t => t.hasAttribute("data-local"))`),
		"times swapped in are in the viewer's zone too")
	return id
}

// createHook: the form refuses bad data and an unknown zone, each named
// next to its field; corrected, it schedules the hook, whose page follows
// it until its delivery shows.
func createHook(t *testing.T, b *bundle) {
	tb := signedIn(t, b)
	hooks := b.overviewPath() + "/hooks"
	tb.open(hooks)
	tb.at("hooks", hooks, "#new-hook")
	tb.click("#new-hook")
	tb.at("hook-form", hooks+"/new", "#path")
	require.True(t, visible(tb, "#when-now:checked"))
	require.False(t, visible(tb, "#timezone"), "the zone shows for a local time only")

	tb.typeInto("#path", "/browser/created")
	tb.typeInto("#data", `{"made": in a form}`)
	tb.click("#when-postAtLocal")
	require.True(t, visible(tb, "#timezone"))
	tb.typeInto("#postAtLocal", "2030-12-01T09:00:00")
	tb.typeInto("#timezone", "Mars/Olympus")
	tb.click(`form.hook-form button[type=submit]`)
	tb.at("hook-refused", hooks, "#form-error")
	require.Contains(t, fieldError(tb, "#data"), "data.made: malformed JSON")
	require.Contains(t, fieldError(tb, "#timezone"), "timezone: is not a known IANA time zone")
	require.Equal(t, "/browser/created", eval[string](tb, `document.querySelector("#path").value`), "the form keeps what was typed")

	// Due in 3 s: the page shows before the delivery, and follows it.
	tb.typeInto("#data", `{"made": "in a form"}`)
	tb.click("#when-postIn")
	tb.typeInto("#postIn", "3s")
	tb.click(`form.hook-form button[type=submit]`)
	id := followedToAttempt(tb, b, "success", true)
	require.Equal(t, "/browser/created", tb.text("#hook-path"))
	require.Contains(t, tb.text("#hook-data"), "in a form")
	require.Equal(t, "completed", b.waitStatus(t, id, "completed").Status)
	require.Equal(t, 1, b.receiver.Received("/browser/created"))
}

// sendTestDelivery: the overview's one click sends a sample payload to
// the path given; a path the API refuses is shown on the create form,
// filled, to correct; "/" by default.
func sendTestDelivery(t *testing.T, b *bundle) {
	tb := signedIn(t, b)
	require.Equal(t, "/", eval[string](tb, `document.querySelector("#test-path").value`))
	tb.typeInto("#test-path", "browser/test")
	tb.click(`#test-delivery button[type=submit]`)
	tb.at("test-refused", b.hookPath("test"), "#form-error")
	require.Contains(t, tb.text("#form-error"), "The test delivery was refused")
	require.Contains(t, fieldError(tb, "#path"), "path: ")
	require.Contains(t, eval[string](tb, `document.querySelector("#data").value`), "sundial.test")

	tb.open(b.overviewPath())
	tb.at("overview", b.overviewPath(), "#test-delivery")
	tb.click(`#test-delivery button[type=submit]`)
	id := followedToAttempt(tb, b, "success", false)
	require.Equal(t, "/", tb.text("#hook-path"))
	require.Contains(t, tb.text("#hook-data"), "A test delivery from the Sundial dashboard.")
	b.waitStatus(t, id, "completed")
	require.Equal(t, 1, b.receiver.Received("/"))
}

// sequenceJSON is the API's view of a sequence, as far as these tests
// look at it.
type sequenceJSON struct {
	Name     string          `json:"name"`
	Schedule json.RawMessage `json:"schedule"`
	Steps    json.RawMessage `json:"steps"`
}

func (b *bundle) sequence(t *testing.T, id string) sequenceJSON {
	t.Helper()
	resp, raw := b.api().Do(t, http.MethodGet, "/v1/sequences/"+id, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET /v1/sequences/%s: %s", id, raw)
	var out struct{ Data sequenceJSON }
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Data
}

// createAndEditSequence: a weekly sequence refused for its zone, then
// created; its edit form, saved with another minute, changes only that.
func createAndEditSequence(t *testing.T, b *bundle) {
	tb := signedIn(t, b)
	sequences := b.overviewPath() + "/sequences"
	tb.open(sequences)
	tb.at("sequences", sequences, "#new-sequence")
	tb.click("#new-sequence")
	tb.at("sequence-form", sequences+"/new", "#name")
	require.False(t, visible(tb, "#every"), "the interval shows for an every schedule only")
	require.False(t, visible(tb, "fieldset.weekly"), "the days of the week show for weekly only")

	tb.typeInto("#name", "browser-weekly")
	tb.selectValue("#frequency", "weekly")
	require.True(t, visible(tb, "fieldset.weekly"))
	tb.click(`input[name=daysOfWeek][value=mon]`)
	tb.click(`input[name=daysOfWeek][value=fri]`)
	// The browser checks the hour's range itself; the zone is the
	// server's to check.
	tb.typeInto("#timezone", "Europe/Pariss")
	tb.typeInto("#hour", "9")
	tb.typeInto("#minute", "30")
	tb.typeInto("#steps", `[{"name": "ping", "path": "/browser/seq", "data": {"n": 1}, "retryOverride": {"minRetries": 2, "delaySecs": 10, "strategy": "fixed"}}]`)
	tb.click(`form.sequence-form button[type=submit]`)
	tb.at("sequence-refused", sequences, "#form-error")
	require.Contains(t, fieldError(tb, "#timezone"), "schedule.timezone: is not a known IANA time zone")
	require.True(t, eval[bool](tb, `document.querySelector('input[name=daysOfWeek][value=fri]').checked`), "the form keeps what was chosen")

	tb.typeInto("#timezone", "Europe/Paris")
	tb.click(`form.sequence-form button[type=submit]`)
	tb.waitText("#sequence-schedule", "09:30")
	tb.shot("sequence-created")
	page := tb.path()
	id := strings.TrimPrefix(page, sequences+"/")
	created := b.sequence(t, id)
	require.Equal(t, "browser-weekly", created.Name)
	require.JSONEq(t, `{"frequency":"weekly","timezone":"Europe/Paris","time":{"hour":9,"minute":30},"daysOfWeek":["mon","fri"]}`, string(created.Schedule))

	tb.click("#edit-sequence")
	tb.at("sequence-edit", page+"/edit", "#minute")
	require.Equal(t, "browser-weekly", eval[string](tb, `document.querySelector("#name").value`))
	tb.typeInto("#minute", "45")
	tb.click(`form.sequence-form button[type=submit]`)
	tb.waitText("#sequence-schedule", "09:45")
	tb.waitPath(page)
	edited := b.sequence(t, id)
	require.JSONEq(t, `{"frequency":"weekly","timezone":"Europe/Paris","time":{"hour":9,"minute":45},"daysOfWeek":["mon","fri"]}`, string(edited.Schedule))
	require.JSONEq(t, string(created.Steps), string(edited.Steps), "the steps, retry override and all, as they were")
}

// createAndEditChannel: a webhook channel refused for its URL, then
// created and sent a test by the notifier; renamed from its edit form.
// The e-mail fields show for the e-mail type only.
func createAndEditChannel(t *testing.T, b *bundle) {
	tb := signedIn(t, b)
	channels := b.overviewPath() + "/channels"
	tb.open(channels)
	tb.at("channels", channels, "#new-channel")
	tb.click("#new-channel")
	tb.at("channel-form", channels+"/new", "#name")
	require.False(t, visible(tb, "#email-host"))
	tb.selectValue("#type", "email")
	require.True(t, visible(tb, "#email-host"))
	require.False(t, visible(tb, "#url"))
	tb.selectValue("#type", "webhook")

	tb.typeInto("#name", "browser webhook")
	tb.typeInto("#url", "ftp://nowhere")
	tb.click(`form.channel-form button[type=submit]`)
	tb.at("channel-refused", channels, "#form-error")
	require.Contains(t, fieldError(tb, "#url"), "url: ")

	tb.typeInto("#url", b.receiver.srv.URL()+"/browser/channel-form")
	tb.click(`form.channel-form button[type=submit]`)
	card := `//h2[normalize-space()="browser webhook"]/parent::div`
	tb.waitXPath(card)
	tb.shot("channel-created")
	tb.clickXPath(card + `//form[contains(@action, "/test")]/button`)
	tb.waitText(`[role=status]`, "Send test: sent")
	require.Equal(t, 1, b.receiver.Received("/browser/channel-form"))

	tb.clickXPath(card + `//a[contains(@href, "/edit")]`)
	tb.waitText("main h1", "Edit channel")
	tb.shot("channel-edit")
	require.Equal(t, b.receiver.srv.URL()+"/browser/channel-form", eval[string](tb, `document.querySelector("#url").value`), "a webhook's URL, as the API shows it")
	tb.typeInto("#name", "browser webhook renamed")
	tb.click(`input[name=events][value="quota.threshold"]`)
	tb.click(`form.channel-form button[type=submit]`)
	renamed := `//h2[normalize-space()="browser webhook renamed"]/parent::div`
	tb.waitXPath(renamed)
	require.Contains(t, tb.textXPath(renamed), "Health: ok")
	require.NotContains(t, tb.textXPath(renamed), "quota.threshold")
}
