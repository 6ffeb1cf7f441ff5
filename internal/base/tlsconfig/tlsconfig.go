// Package tlsconfig builds the TLS settings of vllmtop's HTTP clients (the load's, the
// scraper's) from the two flags they share, --insecure and --ca-file, so both read them alike.
package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// New returns the TLS configuration for a client: TLS 1.2 at least; with insecure, any
// certificate is accepted; with caFile, the PEM certificates in it are trusted in place of the
// system's roots. A CA file that cannot be read or holds no certificate is an error.
func New(insecure bool, caFile string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // the user asked for --insecure
	if caFile == "" {
		return c, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", caFile)
	}
	c.RootCAs = pool
	return c, nil
}
