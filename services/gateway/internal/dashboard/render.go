package dashboard

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"path"

	"github.com/sundial-run/sundial/services/gateway/internal/account"
)

//go:embed templates
var templateFS embed.FS

// pages are the page templates by file name, each parsed with the layout:
// templates/pages/NAME defines "title" and "content".
var pages = mustParsePages()

func mustParsePages() map[string]*template.Template {
	names, err := fs.Glob(templateFS, "templates/pages/*.html")
	if err != nil {
		panic(err)
	}
	out := make(map[string]*template.Template, len(names))
	for _, name := range names {
		t := template.Must(template.New(path.Base(name)).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", name))
		out[path.Base(name)] = t
	}
	return out
}

// funcs are the functions templates may call.
var funcs = template.FuncMap{
	"static": StaticPath,
	// projectPath is the path of a project's page: projectPath .Project "hooks".
	"projectPath": func(p *account.Project, page string) string {
		if p == nil {
			return Prefix
		}
		if page == "" {
			return Prefix + "/p/" + p.ID.String()
		}
		return Prefix + "/p/" + p.ID.String() + "/" + page
	},
	// list is its arguments, to range over a few constants.
	"list": func(s ...string) []string { return s },
	"can": func(p *account.Project, role string) bool {
		return p != nil && p.Role.AtLeast(account.Role(role))
	},
	// percent shows a fraction from 0 to 1 as a whole percentage, rounded
	// down so that a job shows 100% only once it is done.
	"percent": func(f float64) string { return fmt.Sprintf("%d%%", int(math.Floor(f*100+1e-9))) },
}

// View is what every template sees: the page's Data, and what the layout
// needs (the user, their projects, the current project, the CSRF token).
type View struct {
	User     *account.User
	Projects []account.Project
	// Project is the current project on /dashboard/p/{project} routes.
	Project *account.Project
	// CSRF is the session's token; forms write {{template "csrf" .}}.
	CSRF string
	// Nav are the links of the current project's pages.
	Nav []NavLink
	// Data is what the page handler passed to Render.
	Data any
}

// NavLink is a link of the layout's navigation.
type NavLink struct {
	Label, Href string
	Current     bool
}

// projectNav are the pages of a project (docs/dashboard.md, "Routes").
var projectNav = []struct{ label, page string }{
	{"Overview", ""}, {"Hooks", "hooks"}, {"Bulk jobs", "bulk-jobs"}, {"Sequences", "sequences"},
	{"Ordering keys", "ordering-keys"}, {"Channels", "channels"}, {"Keys", "keys"}, {"Listeners", "listeners"},
	{"Settings", "settings"},
}

// Render writes the page template name (a file of templates/pages) in the
// layout with data, status 200.
func Render(w http.ResponseWriter, r *http.Request, name string, data any) {
	RenderStatus(w, r, http.StatusOK, name, data)
}

// RenderStatus is Render with another status.
func RenderStatus(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	execute(w, r, status, name, "layout", data)
}

// RenderFragment writes only the template block of page name (for htmx
// partial updates); the block sees the same View.
func RenderFragment(w http.ResponseWriter, r *http.Request, name, block string, data any) {
	execute(w, r, http.StatusOK, name, block, data)
}

// ErrorPage is the data of errors.html.
type ErrorPage struct {
	Status  int
	Title   string
	Message string
}

// Error renders the errors page with status and a message for people.
func Error(w http.ResponseWriter, r *http.Request, status int, message string) {
	RenderStatus(w, r, status, "errors.html", ErrorPage{Status: status, Title: http.StatusText(status), Message: message})
}

func execute(w http.ResponseWriter, r *http.Request, status int, name, block string, data any) {
	t, ok := pages[name]
	if !ok {
		panic(fmt.Sprintf("dashboard: no page template %q", name)) // a programming error
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, block, view(r, data)); err != nil {
		slog.Error("dashboard template", "page", name, "error", err)
		http.Error(w, "template error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func view(r *http.Request, data any) View {
	v := View{Data: data}
	if s := sessionFrom(r); s != nil {
		v.User = &s.user
		v.Projects = s.projects
		v.CSRF = account.CSRFToken(s.token)
	}
	if p, ok := ProjectFrom(r); ok {
		v.Project = &p
		for _, n := range projectNav {
			href := funcs["projectPath"].(func(*account.Project, string) string)(&p, n.page)
			v.Nav = append(v.Nav, NavLink{Label: n.label, Href: href, Current: href == r.URL.Path})
		}
	}
	return v
}
