package egress_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/egress"
)

func TestLoadRoots(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := egress.LoadRoots(filepath.Join(dir, "missing.pem"))
	require.Error(t, err)

	empty := filepath.Join(dir, "empty.pem")
	require.NoError(t, os.WriteFile(empty, []byte("not a certificate\n"), 0o600))
	_, err = egress.LoadRoots(empty)
	require.ErrorContains(t, err, "no PEM certificate")

	roots, err := egress.LoadRoots("")
	require.NoError(t, err)
	require.NotNil(t, roots)
}

func TestParseAllowList(t *testing.T) {
	t.Parallel()
	got, err := egress.ParseAllowList([]string{"10.1.2.3/8", "192.168.1.7", "fd00::/8"})
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("192.168.1.7/32"),
		netip.MustParsePrefix("fd00::/8"),
	}, got)

	_, err = egress.ParseAllowList([]string{"10.0.0.0/8", "intranet", "300.1.1.1"})
	require.EqualError(t, err, `SUNDIAL_DELIVERY_ALLOW_CIDRS: "intranet,300.1.1.1": want CIDRs such as 10.0.0.0/8`)
}
