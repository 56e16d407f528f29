package dashboard

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/hooklist"
)

// tailParam turns the live tail on (the hooks page polls hooksTail).
const tailParam = "tail"

// pageParams are the page's own query parameters, not filters of the list
// (the message of an action just taken).
var pageParams = map[string]bool{tailParam: true, "done": true, "n": true}

// hooksPage is the data of hooks.html.
type hooksPage struct {
	// Filter is the form's values as given (empty when not).
	Filter   url.Values
	Statuses []string
	Hooks    []hook.Hook
	Total    int64
	Capped   bool
	// Next is the query of the next page; empty on the last. The queries
	// are url.Values.Encode's, typed so that the templates keep their & and =.
	Next template.URL
	// Tail is on; TailQuery is the filters the poll sends (no cursor),
	// TailOn and TailOff the page's with the tail on and off.
	Tail                       bool
	TailQuery, TailOn, TailOff template.URL
	Problems                   []hooklist.FieldError
	// Presets are one-click filters, their queries computed now.
	Presets []preset
}

// preset is a filter a link applies.
type preset struct {
	Label string
	Query template.URL
}

// presets are the filters people reach for most, as of now: the last
// hour's hooks, today's failures (UTC), what is due within the hour, and
// what waits for a retry.
func presets(now time.Time) []preset {
	q := func(kv ...string) template.URL {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return template.URL(v.Encode())
	}
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	today := now.UTC().Truncate(24 * time.Hour)
	return []preset{
		{"Created in the last hour", q("createdAtAfter", stamp(now.Add(-time.Hour)))},
		{"Failed today", q("status", "failed", "postAtAfter", stamp(today), "sortBy", "postAt")},
		{"Due within the hour", q("postAtAfter", stamp(now), "postAtBefore", stamp(now.Add(time.Hour)), "sortBy", "postAt", "sortOrder", "ASC")},
		{"Waiting to retry", q("status", "retry")},
	}
}

// hooks is GET /dashboard/p/{project}/hooks: the list of GET /v1/hooks,
// with the same filters, through the same hooklist code.
// ?id= goes to that hook's page: the search by id, or else by key.
func (d *Dashboard) hooks(w http.ResponseWriter, r *http.Request) {
	if find := r.URL.Query().Get("id"); strings.TrimSpace(find) != "" {
		d.find(w, r, find)
		return
	}
	page, status, err := d.listHooks(r, false)
	if err != nil {
		d.fault(w, r, "list hooks", err)
		return
	}
	page.Presets = presets(time.Now())
	RenderStatus(w, r, status, "hooks.html", page)
}

// find goes to the page of the hook whose id is find (spaces around it
// aside), or else of the hook find is the key of (GET /v1/hooks/by-key's
// hook: its unfinished one, or else its newest).
func (d *Dashboard) find(w http.ResponseWriter, r *http.Request, find string) {
	p, _ := ProjectFrom(r)
	id := strings.TrimSpace(find)
	if _, err := uuid.Parse(id); err != nil {
		var h hook.Hook
		if err = hook.ValidateKey(find); err == nil {
			h, err = d.Hook.GetByKey(r.Context(), p.ID, find)
		}
		switch {
		case errors.Is(err, hook.ErrInvalidKey), errors.Is(err, hook.ErrNotFound):
			Error(w, r, http.StatusNotFound, "No hook of this project has this id or key.")
			return
		case err != nil:
			d.fault(w, r, "find hook by key", err)
			return
		}
		id = h.ID.String()
	}
	http.Redirect(w, r, Prefix+"/p/"+p.ID.String()+"/hooks/"+id, http.StatusSeeOther)
}

// hooksTail is GET /dashboard/p/{project}/hooks/tail: the rows of the
// newest hooks under the filters, the fragment the live tail polls.
func (d *Dashboard) hooksTail(w http.ResponseWriter, r *http.Request) {
	page, status, err := d.listHooks(r, true)
	if err != nil {
		d.fault(w, r, "list hooks", err)
		return
	}
	if status != http.StatusOK {
		Error(w, r, status, "The filters are invalid.")
		return
	}
	RenderFragment(w, r, "hooks.html", "rows", page)
}

// listHooks parses the page's query (empty fields are left out, as an
// unfilled form sends them) and lists one page. newest drops the cursor
// and sorts by creation, newest first, for the tail.
func (d *Dashboard) listHooks(r *http.Request, newest bool) (hooksPage, int, error) {
	p, _ := ProjectFrom(r)
	filter := url.Values{}
	for name, vs := range r.URL.Query() {
		if !pageParams[name] && len(vs) > 0 && vs[0] != "" {
			filter[name] = vs[:1]
		}
	}
	if newest {
		filter.Del(hooklist.ParamCursor)
		filter.Set(hooklist.ParamSortBy, string(hooklist.SortByCreatedAt))
		filter.Set(hooklist.ParamSortOrder, string(hooklist.Desc))
	}
	defaultSort(filter)
	page := hooksPage{Filter: filter, Statuses: hooklist.Statuses, Tail: r.URL.Query().Get(tailParam) != ""}
	noCursor := cloneWithout(filter, hooklist.ParamCursor)
	page.TailQuery = template.URL(noCursor.Encode())
	on := cloneWithout(filter, hooklist.ParamCursor)
	on.Set(tailParam, "1")
	page.TailOn, page.TailOff = template.URL(on.Encode()), page.TailQuery

	q, err := hooklist.Parse(filter)
	var bad *hooklist.InvalidError
	if errors.As(err, &bad) {
		page.Problems = bad.Problems
		return page, http.StatusBadRequest, nil
	}
	if err != nil {
		return page, 0, err
	}
	list, err := d.Hooks.List(r.Context(), p.ID, q)
	if errors.As(err, &bad) {
		page.Problems = bad.Problems
		return page, http.StatusBadRequest, nil
	}
	if err != nil {
		return page, 0, err
	}
	page.Hooks, page.Total, page.Capped = list.Hooks, list.TotalItems, list.TotalCapped
	if list.NextCursor != "" {
		next := cloneWithout(filter, hooklist.ParamCursor)
		next.Set(hooklist.ParamCursor, list.NextCursor)
		page.Next = template.URL(next.Encode())
	}
	return page, http.StatusOK, nil
}

func cloneWithout(v url.Values, name string) url.Values {
	out := url.Values{}
	for k, vs := range v {
		if k != name {
			out[k] = append([]string(nil), vs...)
		}
	}
	return out
}

// defaultSort sorts a postAt window by postAt when the form leaves the sort
// to its default: whoever asks for the hooks due in a window reads them in
// that order, and the list then reads only the window's hooks. Sorted by
// createdAt, a window far back with more than hooklist.CountCap hooks makes
// the list walk every hook created since (docs/dashboard.md, "Hooks").
func defaultSort(filter url.Values) {
	window := filter.Get(hooklist.ParamPostAtAfter) != "" || filter.Get(hooklist.ParamPostAtBefore) != ""
	if window && filter.Get(hooklist.ParamSortBy) == "" {
		filter.Set(hooklist.ParamSortBy, string(hooklist.SortByPostAt))
	}
}
