// Command certgen writes the certificates of a secured test broker (broker.sh start --secure) into a
// directory, made afresh with crypto/x509 at each start: nothing is fetched, nothing is kept.
//
//	go run ./integration/kafka/certgen -dir DIR
//
// It writes:
//
//	ca.pem                   the test CA's certificate (a PEM truststore for clients)
//	truststore.p12           the same CA as a PKCS12 truststore (password: -truststore-password)
//	broker-keystore.p12      the broker's key and certificate (CN=localhost, SANs localhost and
//	                         127.0.0.1) with the CA, for the broker (password: -broker-password)
//	broker-truststore.p12    the CA as the broker's truststore, to check client certificates
//	client.p12               a client key and certificate (CN=alice) signed by the CA (password:
//	                         -client-password), for mutual TLS with a PKCS12 keystore
//	client.pem               the same key (PKCS#8, unencrypted) and chain in PEM, for a PEM keystore
//	unknown-ca.pem           a second CA that signed nothing the broker uses: a client trusting
//	                         only it must refuse the broker's certificate
//
// The broker's files are written with the legacy PKCS12 algorithms, which every Java reads; the
// client's with the modern ones.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

func main() {
	dir := flag.String("dir", "", "directory to write the files into (created)")
	trustPW := flag.String("truststore-password", "trust-secret", "password of truststore.p12 and broker-truststore.p12")
	brokerPW := flag.String("broker-password", "broker-secret", "password of broker-keystore.p12")
	clientPW := flag.String("client-password", "client-secret", "password of client.p12")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "certgen: -dir is required")
		os.Exit(2)
	}
	if err := run(*dir, *trustPW, *brokerPW, *clientPW); err != nil {
		fmt.Fprintln(os.Stderr, "certgen:", err)
		os.Exit(1)
	}
}

type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

var serial int64

// issue makes a certificate for tmpl signed by parent (self-signed when parent is nil).
func issue(tmpl *x509.Certificate, parent *keyPair) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial++
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano() + serial)
	tmpl.NotBefore = time.Now().Add(-time.Hour) // a clock slightly behind must not reject it
	tmpl.NotAfter = time.Now().Add(7 * 24 * time.Hour)
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key}, nil
}

func caTemplate(cn string) *x509.Certificate {
	return &x509.Certificate{Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature}
}

func run(dir, trustPW, brokerPW, clientPW string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, err := issue(caTemplate("streamsgroup test CA"), nil)
	if err != nil {
		return err
	}
	unknown, err := issue(caTemplate("streamsgroup unknown CA"), nil)
	if err != nil {
		return err
	}
	broker, err := issue(&x509.Certificate{Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}, ca)
	if err != nil {
		return err
	}
	client, err := issue(&x509.Certificate{Subject: pkix.Name{CommonName: "alice"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"ca.pem":         certPEM(ca.cert),
		"unknown-ca.pem": certPEM(unknown.cert),
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(client.key)
	if err != nil {
		return err
	}
	files["client.pem"] = append(append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		certPEM(client.cert)...), certPEM(ca.cert)...)
	if files["truststore.p12"], err = pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.cert}, trustPW); err != nil {
		return err
	}
	if files["broker-truststore.p12"], err = pkcs12.LegacyDES.EncodeTrustStore([]*x509.Certificate{ca.cert}, trustPW); err != nil {
		return err
	}
	if files["broker-keystore.p12"], err = pkcs12.LegacyDES.Encode(broker.key, broker.cert, []*x509.Certificate{ca.cert}, brokerPW); err != nil {
		return err
	}
	if files["client.p12"], err = pkcs12.Modern.Encode(client.key, client.cert, []*x509.Certificate{ca.cert}, clientPW); err != nil {
		return err
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}
