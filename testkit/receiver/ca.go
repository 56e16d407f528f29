package receiver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// authority is the process's throwaway CA and the certificate it signed for
// 127.0.0.1, ::1 and localhost, which every receiver serves. Deliveries are
// always HTTPS with verified certificates, so the dispatcher is given the CA
// rather than told to skip verification; the keys live only in memory and
// change every run.
type authority struct {
	caPEM []byte
	leaf  tls.Certificate
}

var (
	authorityOnce sync.Once
	theAuthority  authority
	authorityErr  error
)

// processAuthority makes the CA on first use.
func processAuthority() (authority, error) {
	authorityOnce.Do(func() { theAuthority, authorityErr = newAuthority(time.Now()) })
	return theAuthority, authorityErr
}

func newAuthority(now time.Time) (authority, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return authority{}, fmt.Errorf("receiver CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "Sundial throwaway receiver CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return authority{}, fmt.Errorf("receiver CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return authority{}, fmt.Errorf("receiver CA: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return authority{}, fmt.Errorf("receiver key: %w", err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		return authority{}, fmt.Errorf("receiver certificate: %w", err)
	}
	return authority{
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		leaf:  tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: leafKey},
	}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		// crypto/rand does not fail on supported platforms.
		panic(err)
	}
	return n
}

// CAPEM is the PEM certificate of the CA that signed every receiver's
// certificate in this process.
func CAPEM() ([]byte, error) {
	a, err := processAuthority()
	return a.caPEM, err
}

// WriteCAFile writes CAPEM to path (creating its folder), for the
// dispatcher to trust (SUNDIAL_DELIVERY_CA_FILE).
func WriteCAFile(path string) error {
	caPEM, err := CAPEM()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("receiver CA file: %w", err)
	}
	if err := os.WriteFile(path, caPEM, 0o644); err != nil {
		return fmt.Errorf("receiver CA file: %w", err)
	}
	return nil
}
