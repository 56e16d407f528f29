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

// authority is the process's throwaway CA and the two certificates it
// signed, which the receivers serve. leaf names 127.0.0.1, ::1 and
// example.com, as httptest's certificate does, and not localhost: a test
// reaches a receiver as https://localhost:port to see a name check fail.
// localhostLeaf names localhost too, for the local demo. Deliveries are
// always HTTPS with verified certificates, so the dispatcher is given the CA
// rather than told to skip verification; the keys live only in memory and
// change every run.
type authority struct {
	caPEM         []byte
	leaf          tls.Certificate
	localhostLeaf tls.Certificate
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
	a := authority{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	if a.leaf, err = newLeaf(now, ca, caKey, nil); err != nil {
		return authority{}, err
	}
	if a.localhostLeaf, err = newLeaf(now, ca, caKey, []string{"localhost"}); err != nil {
		return authority{}, err
	}
	return a, nil
}

// newLeaf makes a server certificate signed by ca for 127.0.0.1, ::1,
// example.com and the extra names.
func newLeaf(now time.Time, ca *x509.Certificate, caKey *ecdsa.PrivateKey, extra []string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("receiver key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		DNSNames:     append([]string{"example.com"}, extra...),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("receiver certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.Raw}, PrivateKey: key}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		// crypto/rand does not fail on supported platforms.
		panic(err)
	}
	return n
}

// CAPool is a pool that trusts the CA, and so every receiver of this
// process (and smtptest's servers, which serve Certificate).
func CAPool() (*x509.CertPool, error) {
	a, err := processAuthority()
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(a.caPEM)
	return pool, nil
}

// Certificate is the server certificate the receivers serve (with
// localhost among its names, or not), for another kind of test server
// that is to be trusted through the same CA.
func Certificate(localhost bool) (tls.Certificate, error) {
	a, err := processAuthority()
	if localhost {
		return a.localhostLeaf, err
	}
	return a.leaf, err
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
