package dashboard

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSafeNextStaysInTheDashboard(t *testing.T) {
	t.Parallel()
	for next, want := range map[string]string{
		"/dashboard":                "/dashboard",
		"/dashboard/p/x/hooks?a=b":  "/dashboard/p/x/hooks?a=b",
		"":                          "/dashboard",
		"https://evil.example/":     "/dashboard",
		"//evil.example/dashboard/": "/dashboard",
		"/dashboard/\\evil.example": "/dashboard",
		"/dashboardx":               "/dashboard",
		"/v1/hooks":                 "/dashboard",
	} {
		require.Equal(t, want, safeNext(next), next)
	}
}

func TestEveryPageTemplateRendersInTheLayout(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"errors.html", "signin.html", "set-password.html", "projects.html", "overview.html"} {
		require.Contains(t, pages, name)
		require.NotNil(t, pages[name].Lookup("content"), name)
	}
}
