package tlsconfig

import (
	"crypto/tls"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNew(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	get := func(conf *tls.Config) error {
		tr := &http.Transport{TLSClientConfig: conf}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}

	plain, err := New(false, "")
	require.NoError(t, err)
	assert.Equal(t, uint16(tls.VersionTLS12), plain.MinVersion)
	assert.Error(t, get(plain), "a self-signed server is refused by default")

	insecure, err := New(true, "")
	require.NoError(t, err)
	assert.NoError(t, get(insecure))

	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	trusted, err := New(false, ca)
	require.NoError(t, err)
	assert.NoError(t, get(trusted), "the CA file's certificate is trusted")

	_, err = New(false, filepath.Join(dir, "missing.pem"))
	assert.ErrorContains(t, err, "CA file: open ")
	junk := filepath.Join(dir, "junk.pem")
	require.NoError(t, os.WriteFile(junk, []byte("not a certificate"), 0o600))
	_, err = New(false, junk)
	assert.EqualError(t, err, "CA file "+junk+": no PEM certificate in it")
}
