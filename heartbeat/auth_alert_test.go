package heartbeat

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"
)

// TestRefusedClientCertificateOverTCP: a listener that requires a client certificate refuses a
// client without one by sending a TLS alert. Over TCP, crypto/tls reports it as a *net.OpError
// ("remote error") around its unexported alert type, not as a tls.AlertError, so this test makes a
// real exchange rather than building the error by hand: with TLS 1.2 the handshake fails (Go's
// server sends handshake_failure, Java's bad_certificate), with TLS 1.3 the first read after it
// (which is what a Kafka client sees from a broker with ssl.client.auth=required: bad_certificate).
// Both must be a Fatal TLS *AuthError naming ssl.keystore.location.
func TestRefusedClientCertificateOverTCP(t *testing.T) {
	cert := selfSigned(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert},
		ClientAuth: tls.RequireAnyClientCert, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake() // fails: no client certificate; the alert goes out
			}()
		}
	}()
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		name := map[uint16]string{tls.VersionTLS12: "TLS 1.2", tls.VersionTLS13: "TLS 1.3"}[version]
		err := exchange(ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, MinVersion: version, MaxVersion: version})
		if err == nil {
			t.Fatalf("%s: the server accepted a client without a certificate", name)
		}
		te := ClassifyTransport(fmt.Errorf("asking the cluster for its API versions: %w", err))
		ae, ok := errors.AsType[*AuthError](te)
		if te.Class != Fatal || !ok || ae.Kind != AuthTLS || !strings.Contains(te.Error(), "ssl.keystore.location") {
			t.Errorf("%s: %v (%T) classified %v, %v: want a Fatal TLS *AuthError naming ssl.keystore.location", name, err, err, te.Class, te)
		}
	}
}

// exchange dials addr, writes a few bytes and reads the answer, as a client's first request does.
func exchange(addr string, cfg *tls.Config) error {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		return err
	}
	_, err = c.Read(make([]byte, 1))
	return err
}

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// The TLS alerts about this client's certificate (RFC 8446 §6.2 and RFC 5246 §7.2.2): bad_certificate
// (42) through unknown_ca (48), and certificate_required (116); the others may pass.
func TestCertificateAlerts(t *testing.T) {
	for a, want := range map[tls.AlertError]bool{
		40: false, 41: false, 42: true, 43: true, 44: true, 45: true, 46: true, 47: true, 48: true,
		49: false, 51: false, 70: false, 115: false, 116: true, 117: false,
	} {
		if got := certificateAlert(a); got != want {
			t.Errorf("certificateAlert(%d) = %v, want %v", int(a), got, want)
		}
	}
}

// An AuthError says which step failed: the TLS handshake or the login.
func TestAuthErrorNamesTheStep(t *testing.T) {
	tlsErr := (&AuthError{Kind: AuthTLS, Err: errors.New("x509: unknown authority"), Action: "set ssl.truststore.location"}).Error()
	if want := "the TLS handshake with the cluster failed: x509: unknown authority: set ssl.truststore.location"; tlsErr != want {
		t.Errorf("TLS: %q, want %q", tlsErr, want)
	}
	sasl := (&AuthError{Kind: AuthSASL, Err: errors.New("bad password"), Action: "check sasl.jaas.config"}).Error()
	if want := "authentication to the cluster failed: bad password: check sasl.jaas.config"; sasl != want {
		t.Errorf("SASL: %q, want %q", sasl, want)
	}
}
