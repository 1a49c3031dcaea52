package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// connectionFlags are how to reach the server: TLS, and the bearer token of
// a server started with --auth_token_file (docs/security.md).
type connectionFlags struct {
	tls                                               bool
	tlsCA, tlsServerName, tlsClientCert, tlsClientKey string
	tokenFile, token                                  string
}

func (c *connectionFlags) register(flags *flag.FlagSet) {
	flags.BoolVar(&c.tls, "tls", false, "connect with TLS")
	flags.StringVar(&c.tlsCA, "tls-ca", "", "PEM root certificates for --tls (default: the system's)")
	flags.StringVar(&c.tlsServerName, "tls-server-name", "", "expected name in the server's certificate")
	flags.StringVar(&c.tlsClientCert, "tls-client-cert", "", "PEM client certificate (mutual TLS)")
	flags.StringVar(&c.tlsClientKey, "tls-client-key", "", "PEM private key of --tls-client-cert")
	flags.StringVar(&c.tokenFile, "auth-token-file", "", "file holding the bearer token")
	flags.StringVar(&c.token, "auth-token", "",
		"bearer token (prefer --auth-token-file or $KVSERVE_AUTH_TOKEN: ps shows flags)")
}

func (c *connectionFlags) dialOptions() ([]grpc.DialOption, error) {
	var options []grpc.DialOption
	if c.tls {
		config := &tls.Config{ServerName: c.tlsServerName}
		if c.tlsCA != "" {
			pem, err := os.ReadFile(c.tlsCA)
			if err != nil {
				return nil, fmt.Errorf("--tls-ca: %w", err)
			}
			config.RootCAs = x509.NewCertPool()
			if !config.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--tls-ca: no PEM certificate in %s", c.tlsCA)
			}
		}
		if (c.tlsClientCert == "") != (c.tlsClientKey == "") {
			return nil, errors.New("--tls-client-cert and --tls-client-key go together")
		}
		if c.tlsClientCert != "" {
			pair, err := tls.LoadX509KeyPair(c.tlsClientCert, c.tlsClientKey)
			if err != nil {
				return nil, fmt.Errorf("--tls-client-cert: %w", err)
			}
			config.Certificates = []tls.Certificate{pair}
		}
		options = append(options, grpc.WithTransportCredentials(credentials.NewTLS(config)))
	} else {
		options = append(options, grpc.WithInsecure())
	}
	token, err := c.bearerToken()
	if err != nil {
		return nil, err
	}
	if token != "" {
		options = append(options, grpc.WithPerRPCCredentials(bearerToken{token, c.tls}))
	}
	return options, nil
}

// bearerToken resolves the token like kvserve-cli: --auth-token-file (its
// first line that is not blank or a # comment), else --auth-token, else
// $KVSERVE_AUTH_TOKEN.
func (c *connectionFlags) bearerToken() (string, error) {
	if c.tokenFile != "" {
		file, err := os.Open(c.tokenFile)
		if err != nil {
			return "", fmt.Errorf("--auth-token-file: %w", err)
		}
		defer file.Close()
		lines := bufio.NewScanner(file)
		for lines.Scan() {
			if line := strings.TrimSpace(lines.Text()); line != "" && !strings.HasPrefix(line, "#") {
				return line, nil
			}
		}
		return "", fmt.Errorf("--auth-token-file: no token in %s", c.tokenFile)
	}
	if c.token != "" {
		return strings.TrimSpace(c.token), nil
	}
	return strings.TrimSpace(os.Getenv("KVSERVE_AUTH_TOKEN")), nil
}

// bearerToken sends "authorization: Bearer <token>" with every call.
type bearerToken struct {
	token  string
	secure bool
}

func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity is false so that plaintext on loopback or inside
// a mesh works; over any other network use --tls, or the token can be sniffed.
func (b bearerToken) RequireTransportSecurity() bool { return b.secure }
