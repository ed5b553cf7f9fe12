package config

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"software.sslmate.com/src/go-pkcs12"
)

// marker is the password of every test: no text this package shows may hold it.
const marker = "s3cr3t-Marker-pw"

func TestParseJAAS(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want JAASEntry
	}{
		{`org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="p w";`,
			JAASEntry{ScramLoginModule, "REQUIRED", map[string]string{"username": "alice", "password": "p w"}}},
		{"org.apache.kafka.common.security.plain.PlainLoginModule Required\n  username='bob'\n  password=x-y_z$1 ;",
			JAASEntry{PlainLoginModule, "REQUIRED", map[string]string{"username": "bob", "password": "x-y_z$1"}}},
		// escapes: \" \\ \n octal, and a quote of the other kind inside
		{`m optional a="q\"b\\c\n\101\0619'" b='say "hi"';`,
			JAASEntry{"m", "OPTIONAL", map[string]string{"a": "q\"b\\c\nA19'", "b": `say "hi"`}}},
		// comments of every kind, and a value given twice (the last wins, as in Kafka's HashMap)
		{"m /* a\ncomment */ sufficient // to the end\n a=1 / also a comment\n a=2;",
			JAASEntry{"m", "SUFFICIENT", map[string]string{"a": "2"}}},
		// a quote ends at a line end
		{"m requisite a=\"open\n;", JAASEntry{"m", "REQUISITE", map[string]string{"a": "open"}}},
		// quoted module and option names, characters beyond ASCII in a word
		{`"m" "required" "user name"=wörter€;`, JAASEntry{"m", "REQUIRED", map[string]string{"user name": "wörter€"}}},
	} {
		got, err := ParseJAAS(tc.in)
		if err != nil {
			t.Errorf("ParseJAAS(%q): %v", tc.in, err)
			continue
		}
		if fmt.Sprint(got.Options) != fmt.Sprint(tc.want.Options) || got.LoginModule != tc.want.LoginModule || got.ControlFlag != tc.want.ControlFlag {
			t.Errorf("ParseJAAS(%q) = %q %q %q, want %q", tc.in, got.LoginModule, got.ControlFlag, got.Options, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", "no login module"},
		{"  /* nothing */ ", "no login module"},
		{"m", "control flag is missing"},
		{"m mandatory;", "expected a control flag"},
		{"m required username=u", "not ended by ';'"},
		{"m required username u;", "at character 12: the option username is not followed by '='"},
		{"m required password=" + marker + " x;", "at character 38: an option is not followed"},
		{"m required password=;", "the option password has no value"},
		{`m required password="` + marker + `;`, "the quote \" opened here is not closed"},
		{`m required a=1; n required b=2;`, "2 login modules"},
		{`; m required;`, "expected the login module class name"},
		{"m required \u0085=1;", "expected an option name"},
		{"m required a/b=1;", "at character 12: an option is not followed by '='"}, // '/' starts a comment: quote such values
	} {
		_, err := ParseJAAS(tc.in)
		var je *JAASError
		if !errors.As(err, &je) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseJAAS(%q) = %v, want a *JAASError with %q", tc.in, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), marker) {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

func TestJAASEntryStringHidesValues(t *testing.T) {
	e, err := ParseJAAS(ScramLoginModule + ` required username="alice" password="` + marker + `" tokenauth=true;`)
	if err != nil {
		t.Fatal(err)
	}
	s := e.String()
	if strings.Contains(s, marker) || !strings.Contains(s, `username="alice"`) || !strings.Contains(s, `password="[hidden]"`) {
		t.Fatalf("String() = %s", s)
	}
	back, err := ParseJAAS(formatJAAS(e))
	if err != nil || fmt.Sprint(back) != fmt.Sprint(e) || back.Options["password"] != marker {
		t.Fatalf("formatJAAS round trip: %v %v", back, err)
	}
}

// pki is a test CA with a server certificate for localhost/127.0.0.1 and a client certificate,
// written as PEM and PKCS12 files in dir.
type pki struct {
	dir                                string
	caPEM, caP12, serverPEM, clientPEM string
	clientP12, otherCAPEM              string
	serverCert                         tls.Certificate
	caPool                             *x509.CertPool
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	p := &pki{dir: dir}
	ca, caKey := selfSigned(t, "test CA")
	other, _ := selfSigned(t, "unknown CA")
	p.caPool = x509.NewCertPool()
	p.caPool.AddCert(ca)
	srv, srvKey := issue(t, ca, caKey, "localhost", false)
	cli, cliKey := issue(t, ca, caKey, "client", true)
	p.serverCert = tls.Certificate{Certificate: [][]byte{srv.Raw, ca.Raw}, PrivateKey: srvKey, Leaf: srv}
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	certPEM := func(c *x509.Certificate) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	keyPEM := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	p.caPEM = write("ca.pem", certPEM(ca))
	p.otherCAPEM = write("other-ca.pem", certPEM(other))
	p.serverPEM = write("server.pem", append(keyPEM(srvKey), certPEM(srv)...))
	p.clientPEM = write("client.pem", append(append(keyPEM(cliKey), certPEM(cli)...), certPEM(ca)...))
	trust, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca}, marker)
	if err != nil {
		t.Fatal(err)
	}
	p.caP12 = write("truststore.p12", trust)
	ks, err := pkcs12.Modern.Encode(cliKey, cli, []*x509.Certificate{ca}, marker)
	if err != nil {
		t.Fatal(err)
	}
	p.clientP12 = write("client.p12", ks)
	return p
}

func selfSigned(t *testing.T, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c, key
}

func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, client bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	} else {
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c, key
}

// handshake runs a TLS handshake between a client with cfg (for serverName) and a server with the
// test server certificate, which asks for a client certificate signed by the test CA when mutual.
func (p *pki) handshake(t *testing.T, cfg *tls.Config, serverName string, mutual bool) (clientErr error, clientCert bool) {
	t.Helper()
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	scfg := &tls.Config{Certificates: []tls.Certificate{p.serverCert}}
	if mutual {
		scfg.ClientAuth, scfg.ClientCAs = tls.RequireAndVerifyClientCert, p.caPool
	}
	srv := tls.Server(c2, scfg)
	done := make(chan bool, 1)
	go func() {
		_ = srv.Handshake()
		done <- len(srv.ConnectionState().PeerCertificates) > 0
		c2.Close()
	}()
	cfg = cfg.Clone()
	cfg.ServerName = serverName
	cli := tls.Client(c1, cfg)
	err := cli.Handshake()
	c1.Close()
	return err, <-done
}

func security(t *testing.T, m map[string]string) Security {
	t.Helper()
	s, err := SecurityFromMap(m)
	if err != nil {
		t.Fatalf("SecurityFromMap(%q): %v", m, err)
	}
	return s
}

func TestTLSFromStores(t *testing.T) {
	p := newPKI(t)
	for name, m := range map[string]map[string]string{
		"PEM truststore":                 {KeySSLTruststoreLocation: p.caPEM},
		"PEM truststore, type given":     {KeySSLTruststoreLocation: p.caPEM, KeySSLTruststoreType: "pem"},
		"PKCS12 truststore":              {KeySSLTruststoreLocation: p.caP12, KeySSLTruststorePassword: marker},
		"PKCS12 truststore, type given":  {KeySSLTruststoreLocation: p.caP12, KeySSLTruststorePassword: marker, KeySSLTruststoreType: "PKCS12"},
		"mutual TLS, PKCS12 keystore":    {KeySSLTruststoreLocation: p.caPEM, KeySSLKeystoreLocation: p.clientP12, KeySSLKeystorePassword: marker},
		"mutual TLS, PKCS12, key pw":     {KeySSLTruststoreLocation: p.caPEM, KeySSLKeystoreLocation: p.clientP12, KeySSLKeystorePassword: marker, KeySSLKeyPassword: marker},
		"mutual TLS, PEM keystore":       {KeySSLTruststoreLocation: p.caPEM, KeySSLKeystoreLocation: p.clientPEM, KeySSLKeystoreType: "PEM"},
		"mutual TLS, PEM keystore found": {KeySSLTruststoreLocation: p.caPEM, KeySSLKeystoreLocation: p.clientPEM},
	} {
		m[KeySecurityProtocol] = "ssl"
		s := security(t, m)
		tc, err := s.TLSConfig()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		mutual := s.KeystoreLocation != ""
		err, sent := p.handshake(t, tc, "localhost", mutual)
		if err != nil || sent != mutual {
			t.Errorf("%s: handshake %v, client certificate sent %v", name, err, sent)
		}
	}

	// An unknown CA, a host name the certificate does not hold, and the same with the check off.
	s := security(t, map[string]string{KeySecurityProtocol: "SSL", KeySSLTruststoreLocation: p.otherCAPEM})
	tc, _ := s.TLSConfig()
	if err, _ := p.handshake(t, tc, "localhost", false); !errors.As(err, new(x509.UnknownAuthorityError)) {
		t.Errorf("unknown CA: %v, want an x509.UnknownAuthorityError", err)
	}
	s = security(t, map[string]string{KeySecurityProtocol: "SSL", KeySSLTruststoreLocation: p.caPEM})
	tc, _ = s.TLSConfig()
	if err, _ := p.handshake(t, tc, "broker.example", false); !errors.As(err, new(x509.HostnameError)) {
		t.Errorf("wrong host: %v, want an x509.HostnameError", err)
	}
	s = security(t, map[string]string{KeySecurityProtocol: "SSL", KeySSLTruststoreLocation: p.caPEM, KeySSLEndpointIDAlg: ""})
	tc, _ = s.TLSConfig()
	if err, _ := p.handshake(t, tc, "broker.example", false); err != nil {
		t.Errorf("host name check off: %v", err)
	}
	s = security(t, map[string]string{KeySecurityProtocol: "SSL", KeySSLTruststoreLocation: p.otherCAPEM, KeySSLEndpointIDAlg: ""})
	tc, _ = s.TLSConfig()
	if err, _ := p.handshake(t, tc, "broker.example", false); !errors.As(err, new(*tls.CertificateVerificationError)) {
		t.Errorf("host name check off, unknown CA: %v, want a *tls.CertificateVerificationError", err)
	}
}

func TestClientOptions(t *testing.T) {
	p := newPKI(t)
	c, err := FromMap(map[string]string{
		KeyApplicationID: "app", KeyBootstrapServers: "127.0.0.1:9093,localhost:9094",
		KeySecurityProtocol: "sasl_ssl", KeySASLMechanism: "SCRAM-SHA-512",
		KeySASLJAASConfig:        ScramLoginModule + ` required username="alice" password="` + marker + `";`,
		KeySSLTruststoreLocation: p.caP12, KeySSLTruststorePassword: marker,
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Security.Protocol != ProtocolSASLSSL || c.Security.SASLUsername != "alice" || c.Security.SASLPassword.Reveal() != marker {
		t.Fatalf("security %+v", c.Security)
	}
	opts, err := c.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if seeds := cl.OptValue(kgo.SeedBrokers).([]string); len(seeds) != 2 {
		t.Fatalf("seeds %v", seeds)
	}
	if tc, _ := cl.OptValue(kgo.DialTLSConfig).(*tls.Config); tc == nil || tc.RootCAs == nil {
		t.Fatalf("no TLS config with the truststore's CAs")
	}
	if mechs := cl.OptValues(kgo.SASL); len(mechs) != 1 {
		t.Fatalf("SASL mechanisms %v", mechs)
	} else if m := mechs[0]; fmt.Sprint(m) == "" {
		t.Fatalf("SASL mechanism %v", m)
	}
	if got := c.Security.String(); got != "SASL_SSL, SCRAM-SHA-512 as alice, truststore "+p.caP12 {
		t.Fatalf("String() = %q", got)
	}

	// PLAINTEXT: seeds only.
	c, _ = FromMap(map[string]string{KeyApplicationID: "app", KeyBootstrapServers: "h:1"})
	if opts, err := c.ClientOptions(); err != nil || len(opts) != 1 {
		t.Fatalf("plaintext: %d options, %v", len(opts), err)
	}
	c.BootstrapServers = nil
	if _, err := c.ClientOptions(); !hasKey(err, KeyBootstrapServers) {
		t.Fatalf("no servers: %v", err)
	}
}

func hasKey(err error, key string) bool {
	var ce *Error
	return errors.As(err, &ce) && ce.Has(key)
}

// TestSecurityMistakes: each mistake is an *Error naming the key, with a sentence saying what to do,
// and no text shows a password.
func TestSecurityMistakes(t *testing.T) {
	p := newPKI(t)
	jaas := ScramLoginModule + ` required username="alice" password="` + marker + `";`
	plainJaas := PlainLoginModule + ` required username="alice" password="` + marker + `";`
	sasl := func(kv ...string) map[string]string {
		m := map[string]string{KeySecurityProtocol: "SASL_SSL", KeySASLMechanism: "SCRAM-SHA-512", KeySASLJAASConfig: jaas}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "-" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		m       map[string]string
		key     string
		want    string
		atBuild bool // found when the stores are read (Options), not by FromMap
	}{
		{"bad protocol", sasl(KeySecurityProtocol, "TLS"), KeySecurityProtocol, "must be PLAINTEXT, SSL", false},
		{"bad mechanism", sasl(KeySASLMechanism, "SCRAM-SHA-1"), KeySASLMechanism, "must be PLAIN, SCRAM-SHA-256", false},
		{"mechanism in lower case", sasl(KeySASLMechanism, "scram-sha-512"), KeySASLMechanism, "did you mean SCRAM-SHA-512?", false},
		{"GSSAPI", sasl(KeySASLMechanism, "GSSAPI"), KeySASLMechanism, "not supported", false},
		{"no mechanism", sasl(KeySASLMechanism, "-"), KeySASLMechanism, "is required with security.protocol=SASL_SSL", false},
		{"mechanism without jaas", sasl(KeySASLJAASConfig, "-"), KeySASLJAASConfig, "is required with sasl.mechanism=SCRAM-SHA-512", false},
		{"jaas for the wrong module", sasl(KeySASLJAASConfig, plainJaas), KeySASLJAASConfig, "needs " + ScramLoginModule, false},
		{"jaas for the wrong module, PLAIN", sasl(KeySASLMechanism, "PLAIN"), KeySASLJAASConfig, "needs " + PlainLoginModule, false},
		{"unsupported module", sasl(KeySASLJAASConfig, `com.sun.security.auth.module.Krb5LoginModule required password="`+marker+`";`), KeySASLJAASConfig, "is not supported", false},
		{"jaas syntax", sasl(KeySASLJAASConfig, ScramLoginModule+` required username="a" password=`+marker), KeySASLJAASConfig, "not ended by ';'", false},
		{"jaas without password", sasl(KeySASLJAASConfig, ScramLoginModule+` required username="a";`), KeySASLJAASConfig, "needs both", false},
		{"SASL keys with PLAINTEXT", sasl(KeySecurityProtocol, "PLAINTEXT"), KeySASLJAASConfig, "has no effect with security.protocol=PLAINTEXT", false},
		{"SASL mechanism with SSL", sasl(KeySecurityProtocol, "SSL"), KeySASLMechanism, "set security.protocol=SASL_SSL", false},
		{"SSL keys with SASL_PLAINTEXT", sasl(KeySecurityProtocol, "SASL_PLAINTEXT", KeySSLTruststoreLocation, p.caPEM), KeySSLTruststoreLocation, "set security.protocol=SSL or SASL_SSL", false},
		{"JKS type", sasl(KeySSLTruststoreLocation, p.caPEM, KeySSLTruststoreType, "JKS"), KeySSLTruststoreType, "convert the store to PKCS12", false},
		{"bad endpoint algorithm", sasl(KeySSLEndpointIDAlg, "http"), KeySSLEndpointIDAlg, "must be https", false},
		{"truststore password without a truststore", sasl(KeySSLTruststorePassword, marker), KeySSLTruststorePassword, "without ssl.truststore.location", false},
		{"PEM truststore with a password", sasl(KeySSLTruststoreLocation, p.caPEM, KeySSLTruststoreType, "PEM", KeySSLTruststorePassword, marker), KeySSLTruststorePassword, "no password", false},
		{"PKCS12 keystore without a password", sasl(KeySSLKeystoreLocation, p.clientP12, KeySSLKeystoreType, "PKCS12"), KeySSLKeystorePassword, "is required with a PKCS12 keystore", false},
		{"key password not the store's", sasl(KeySSLKeystoreLocation, p.clientP12, KeySSLKeystorePassword, marker, KeySSLKeyPassword, marker+"x"), KeySSLKeyPassword, "differs from ssl.keystore.password", false},
		{"missing truststore", sasl(KeySSLTruststoreLocation, filepath.Join(p.dir, "nope.pem")), KeySSLTruststoreLocation, "cannot read the truststore: no such file", true},
		{"wrong truststore password", sasl(KeySSLTruststoreLocation, p.caP12, KeySSLTruststorePassword, marker+"x"), KeySSLTruststorePassword, "wrong password", true},
		{"truststore password missing", sasl(KeySSLTruststoreLocation, p.caP12), KeySSLTruststorePassword, "has a password", true},
		{"PKCS12 that does not decode", sasl(KeySSLTruststoreLocation, p.serverPEM, KeySSLTruststoreType, "PKCS12"), KeySSLTruststoreLocation, "is not a PKCS12 truststore", true},
		{"PEM without certificates", sasl(KeySSLTruststoreLocation, writeFile(t, p.dir, "empty.pem", "-----BEGIN NOTHING-----\n-----END NOTHING-----\n")), KeySSLTruststoreLocation, "holds no PEM certificate", true},
		{"JKS file", sasl(KeySSLTruststoreLocation, writeFile(t, p.dir, "store.jks", "\xfe\xed\xfe\xed\x00\x00\x00\x02")), KeySSLTruststoreLocation, "is a JKS store", true},
		{"wrong keystore password", sasl(KeySSLKeystoreLocation, p.clientP12, KeySSLKeystorePassword, marker+"x"), KeySSLKeystorePassword, "wrong password", true},
		{"PKCS12 keystore that does not decode", sasl(KeySSLKeystoreLocation, p.caPEM, KeySSLKeystoreType, "PKCS12", KeySSLKeystorePassword, marker), KeySSLKeystoreLocation, "is not a PKCS12 keystore", true},
		{"PEM keystore without a key", sasl(KeySSLKeystoreLocation, p.caPEM), KeySSLKeystoreLocation, "must hold the client's private key", true},
		{"PEM keystore with a key password", sasl(KeySSLKeystoreLocation, p.clientPEM, KeySSLKeyPassword, marker), KeySSLKeyPassword, "is not encrypted", true},
		{"encrypted PEM key", sasl(KeySSLKeystoreLocation, writeFile(t, p.dir, "enc.pem", "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n")), KeySSLKeystoreLocation, "encrypted private key", true},
	} {
		m := tc.m
		m[KeyApplicationID] = "app"
		m[KeyBootstrapServers] = "127.0.0.1:9093"
		c, err := FromMap(m)
		if !tc.atBuild {
			checkProblem(t, tc.name, err, tc.key, tc.want)
			if _, err := SecurityFromMap(m); !hasKey(err, tc.key) {
				t.Errorf("%s: SecurityFromMap: %v", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: FromMap: %v", tc.name, err)
			continue
		}
		_, err = c.ClientOptions()
		checkProblem(t, tc.name, err, tc.key, tc.want)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func checkProblem(t *testing.T, name string, err error, key, want string) {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) || !ce.Has(key) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v, want a problem with %s saying %q", name, err, key, want)
		return
	}
	if strings.Contains(err.Error(), marker) || strings.Contains(fmt.Sprintf("%+v %#v", err, err), marker) {
		t.Errorf("%s: the error shows the password: %v", name, err)
	}
	checkMessage(t, err.Error())
}

// TestSecretsNeverShown prints a configuration with secrets every way a program might.
func TestSecretsNeverShown(t *testing.T) {
	p := newPKI(t)
	c, err := FromMap(map[string]string{
		KeyApplicationID: "app", KeyBootstrapServers: "h:1", KeySecurityProtocol: "SASL_SSL", KeySASLMechanism: "PLAIN",
		KeySASLJAASConfig:        PlainLoginModule + ` required username="alice" password="` + marker + `";`,
		KeySSLTruststoreLocation: p.caP12, KeySSLTruststorePassword: marker,
		KeySSLKeystoreLocation: p.clientP12, KeySSLKeystorePassword: marker, KeySSLKeyPassword: marker,
	})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		texts = append(texts, fmt.Sprintf(verb, c), fmt.Sprintf(verb, c.Security), fmt.Sprintf(verb, &c.Security),
			fmt.Sprintf(verb, c.Security.SASLPassword))
	}
	js, _ := json.Marshal(c)
	texts = append(texts, string(js), c.Security.String())
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("config", "cfg", c, "sec", c.Security, "pw", c.Security.KeyPassword)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("config", "cfg", c, "sec", c.Security, "pw", c.Security.KeyPassword)
	texts = append(texts, buf.String())
	hexMarker := fmt.Sprintf("%x", marker)
	for _, s := range texts {
		if strings.Contains(s, marker) || strings.Contains(strings.ToLower(s), hexMarker) {
			t.Fatalf("a secret is shown: %s", s)
		}
	}
	if c.Security.SASLPassword.Reveal() != marker || c.Security.KeyPassword.Reveal() != marker {
		t.Fatal("Reveal does not give the secret back")
	}
	if !strings.Contains(fmt.Sprint(c.Security.SASLPassword), "[hidden]") {
		t.Fatalf("a secret prints as %v", c.Security.SASLPassword)
	}
}

func TestLoadSecurity(t *testing.T) {
	p := newPKI(t)
	f := writeFile(t, p.dir, "client.properties", "security.protocol=SSL\nssl.truststore.location="+p.caPEM+"\nclient.id=ignored\n")
	s, err := LoadSecurity(f)
	if err != nil || s.Protocol != ProtocolSSL || s.TruststoreLocation != p.caPEM {
		t.Fatalf("LoadSecurity: %+v, %v", s, err)
	}
	if _, err := LoadSecurity(filepath.Join(p.dir, "missing.properties")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("a missing file: %v", err)
	}
	f = writeFile(t, p.dir, "bad.properties", "sasl.mechanism=PLAIN\nsasl.jaas.config="+PlainLoginModule+" required password=\""+marker+"\";\n")
	if _, err := LoadSecurity(f); !hasKey(err, KeySASLMechanism) || strings.Contains(err.Error(), marker) {
		t.Fatalf("SASL keys without a SASL protocol: %v", err)
	}
}
