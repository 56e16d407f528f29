package egress

import (
	"crypto/x509"
	"fmt"
	"net/netip"
	"os"
	"strings"
)

// ParseAllowList parses the operator's allow-list
// (SUNDIAL_DELIVERY_ALLOW_CIDRS): "10.0.0.0/8"-style networks, a bare
// address standing for itself alone. The dispatcher and the notifier read
// the same variable, so they read it the same way.
func ParseAllowList(items []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var bad []string
	for _, s := range items {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		bad = append(bad, s)
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("SUNDIAL_DELIVERY_ALLOW_CIDRS: %q: want CIDRs such as 10.0.0.0/8", strings.Join(bad, ","))
	}
	return out, nil
}

// LoadRoots returns the system's trusted CA certificates plus those of the
// PEM file caFile (SUNDIAL_DELIVERY_CA_FILE; none when empty). A file that
// cannot be read or holds no certificate is an error: an operator who names
// one expects it used.
func LoadRoots(caFile string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if caFile == "" {
		return pool, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("SUNDIAL_DELIVERY_CA_FILE: %w", err)
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("SUNDIAL_DELIVERY_CA_FILE %s: no PEM certificate in it", caFile)
	}
	return pool, nil
}
