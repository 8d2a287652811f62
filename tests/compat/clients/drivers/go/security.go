package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Security is a command's optional "security" object: the listener's protocol, the SASL mechanism and
// user, and PEM files (ca: trusted authorities; cert and key: the client's certificate, for mutual TLS).
type Security struct {
	Protocol  string `json:"protocol"`
	Mechanism string `json:"mechanism"`
	Username  string `json:"username"`
	Password  string `json:"password"`
	CA        string `json:"ca"`
	Cert      string `json:"cert"`
	Key       string `json:"key"`
}

func securityOpts(s *Security) ([]kgo.Opt, error) {
	if s == nil || s.Protocol == "" || s.Protocol == "PLAINTEXT" {
		return nil, nil
	}
	var opts []kgo.Opt
	if s.Protocol == "SSL" || s.Protocol == "SASL_SSL" {
		pem, err := os.ReadFile(s.CA)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no certificate in %s", s.CA)
		}
		config := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		if s.Cert != "" {
			pair, err := tls.LoadX509KeyPair(s.Cert, s.Key)
			if err != nil {
				return nil, err
			}
			config.Certificates = []tls.Certificate{pair}
		}
		opts = append(opts, kgo.DialTLSConfig(config))
	}
	if s.Protocol == "SASL_PLAINTEXT" || s.Protocol == "SASL_SSL" {
		switch s.Mechanism {
		case "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("unknown SASL mechanism %q", s.Mechanism)
		}
	}
	return opts, nil
}

// authenticated returns the error of a first connection on a secured listener (a refused SASL login, the
// broker's TLS alert): franz-go retries producing through such errors until the record times out.
func authenticated(cl *kgo.Client, s *Security) error {
	if s == nil || s.Protocol == "" || s.Protocol == "PLAINTEXT" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}
