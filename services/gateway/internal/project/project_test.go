package project_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestValidateDomain(t *testing.T) {
	t.Parallel()
	valid := map[string]string{
		"example.com":                    "example.com",
		"Hooks.Example.COM":              "hooks.example.com",
		"localhost":                      "localhost",
		"localhost:8443":                 "localhost:8443",
		"api-1.example.io:65535":         "api-1.example.io:65535",
		"192.0.2.10":                     "192.0.2.10",
		"192.0.2.10:1":                   "192.0.2.10:1",
		"[2001:db8::1]":                  "[2001:db8::1]",
		"[2001:db8::1]:8443":             "[2001:db8::1]:8443",
		"[::ffff:192.0.2.1]":             "[::ffff:192.0.2.1]",
		"xn--bcher-kva.example":          "xn--bcher-kva.example",
		strings.Repeat("a", 63) + ".com": strings.Repeat("a", 63) + ".com",
	}
	for in, want := range valid {
		got, err := project.ValidateDomain(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got)
	}
	invalid := map[string]string{
		"":                               "must not be empty",
		"https://example.com":            "without a scheme",
		"example.com/hooks":              "without a path",
		"example.com?x=1":                "without a path",
		"user@example.com":               "user information",
		"example.com:0":                  "1 to 65535",
		"example.com:65536":              "1 to 65535",
		"example.com:+80":                "1 to 65535",
		"example.com:":                   "1 to 65535",
		"example.com:http":               "1 to 65535",
		"2001:db8::1":                    "in brackets",
		"[2001:db8::1":                   "missing ]",
		"[2001:db8::1]x":                 "unexpected text",
		"[192.0.2.1]":                    "not an IPv6 address",
		"[fe80::1%eth0]":                 "not an IPv6 address",
		"exa_mple.com":                   "not allowed",
		"exa mple.com":                   "not allowed",
		"-example.com":                   "hyphen",
		"example..com":                   "1 to 63",
		"example.com.":                   "1 to 63",
		strings.Repeat("a", 64) + ".com": "1 to 63",
		"1.2.3":                          "neither a hostname nor an IPv4",
		"256.1.1.1":                      "neither a hostname nor an IPv4",
		":8080":                          "host is missing",
		"bücher.example":                 "not allowed",
	}
	for in, want := range invalid {
		_, err := project.ValidateDomain(in)
		require.ErrorIs(t, err, project.ErrInvalid, in)
		require.ErrorContains(t, err, want, in)
	}
}

func TestValidateName(t *testing.T) {
	t.Parallel()
	got, err := project.ValidateName("  Acme Billing  ")
	require.NoError(t, err)
	require.Equal(t, "Acme Billing", got)
	_, err = project.ValidateName(strings.Repeat("é", 200))
	require.NoError(t, err, "200 characters, 400 bytes")
	for _, bad := range []string{"", "   ", strings.Repeat("x", 201), "tab\there", "bad\xffutf8"} {
		_, err := project.ValidateName(bad)
		require.ErrorIs(t, err, project.ErrInvalid, bad)
	}
}

func TestCreateStoresTheProjectAndItsKeys(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewPool(t)
	ctx := t.Context()
	created, err := project.Create(ctx, pool, secrettest.Keyring(), "Acme", "Hooks.Example.com:8443")
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`^sdsig_[A-Za-z0-9_-]{43}$`), created.SigningKey)

	q := store.New(pool)
	projectID, err := apikey.NewVerifier(q).Verify(ctx, created.APIKey)
	require.NoError(t, err)
	require.Equal(t, created.ID, projectID)
	secret, err := project.ActiveSigningKey(ctx, q, secrettest.Keyring(), created.ID)
	require.NoError(t, err)
	require.Equal(t, created.SigningKey, secret)
	plan, err := q.GetProjectPlan(ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, "hooks.example.com:8443", plan.Domain, "stored in lower case")
	require.Equal(t, int64(100000), plan.PlanQuota)

	_, err = project.Create(ctx, pool, secrettest.Keyring(), "", "example.com")
	require.ErrorIs(t, err, project.ErrInvalid)
}

func TestSetPlan(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewPool(t)
	ctx := t.Context()
	created, err := project.Create(ctx, pool, secrettest.Keyring(), "Acme", "example.com")
	require.NoError(t, err)
	q := store.New(pool)
	require.NoError(t, project.SetPlan(ctx, q, created.ID, project.Plan{Quota: 10, HardCapPercent: 150}))
	plan, err := q.GetProjectPlan(ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, int64(10), plan.PlanQuota)
	require.Equal(t, int32(150), plan.PlanHardCapPercent)

	require.Error(t, project.SetPlan(ctx, q, created.ID, project.Plan{Quota: 10, HardCapPercent: 99}))
	other, err := project.Create(ctx, pool, secrettest.Keyring(), "Other", "example.org")
	require.NoError(t, err)
	other.ID[0] ^= 0xff
	require.ErrorIs(t, project.SetPlan(ctx, q, other.ID, project.Plan{Quota: 1, HardCapPercent: 100}), postgres.ErrNotFound)
}
