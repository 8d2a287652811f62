package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kgo"
)

// connectionOpts go to every client this program makes: the TLS dialer when -tls-ca is given.
var connectionOpts []kgo.Opt

// newClient is kgo.NewClient with connectionOpts added.
func newClient(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append(opts, connectionOpts...)...)
}

// useTLS makes every connection TLS, trusting the PEM CA certificates in caFile (the server's name is
// checked against the address dialed, as Kafka clients check it by default).
func useTLS(caFile string) error {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("-tls-ca %s: no PEM certificate", caFile)
	}
	connectionOpts = append(connectionOpts, kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	return nil
}
