package config

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/streamsgroup/streamsgroup/internal/text"
)

// Security keys: the Kafka client settings for TLS and SASL that this package reads, with Kafka's
// names and meanings (see Security).
const (
	KeySecurityProtocol      = "security.protocol"
	KeySASLMechanism         = "sasl.mechanism"
	KeySASLJAASConfig        = "sasl.jaas.config"
	KeySSLTruststoreLocation = "ssl.truststore.location"
	KeySSLTruststorePassword = "ssl.truststore.password"
	KeySSLTruststoreType     = "ssl.truststore.type"
	KeySSLKeystoreLocation   = "ssl.keystore.location"
	KeySSLKeystorePassword   = "ssl.keystore.password"
	KeySSLKeystoreType       = "ssl.keystore.type"
	KeySSLKeyPassword        = "ssl.key.password"
	KeySSLEndpointIDAlg      = "ssl.endpoint.identification.algorithm"
)

// securityKeys are the keys Security reads, in the order problems about them are checked.
var securityKeys = []string{KeySecurityProtocol, KeySASLMechanism, KeySASLJAASConfig, KeySSLTruststoreLocation,
	KeySSLTruststorePassword, KeySSLTruststoreType, KeySSLKeystoreLocation, KeySSLKeystorePassword, KeySSLKeystoreType,
	KeySSLKeyPassword, KeySSLEndpointIDAlg}

// secretKeys hold secrets: no message, String or log shows their values.
var secretKeys = map[string]bool{KeySASLJAASConfig: true, KeySSLTruststorePassword: true,
	KeySSLKeystorePassword: true, KeySSLKeyPassword: true}

// IsSecurityKey reports whether key is one of the security keys Security reads.
func IsSecurityKey(key string) bool { return slices.Contains(securityKeys, key) }

// Security protocols (security.protocol), as Kafka names them.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// SASL mechanisms (sasl.mechanism) this package maps to franz-go.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// Store types (ssl.truststore.type, ssl.keystore.type).
const (
	StoreTypePEM    = "PEM"
	StoreTypePKCS12 = "PKCS12"
)

const hidden = "[hidden]"

// Secret is a password or another secret value. Every way of printing it (fmt with any verb, slog,
// JSON, text marshalling) shows "[hidden]"; Reveal returns the value.
type Secret struct{ s string }

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{s: s} }

// Reveal returns the secret value, for the code that hands it to the TLS or SASL library.
func (s Secret) Reveal() string { return s.s }

// IsSet reports whether the secret is not empty.
func (s Secret) IsSet() bool { return s.s != "" }

// String returns "[hidden]" (or "" when the secret is empty).
func (s Secret) String() string {
	if s.s == "" {
		return ""
	}
	return hidden
}

// GoString is String, so %#v hides the value too.
func (s Secret) GoString() string { return `config.Secret("` + s.String() + `")` }

// Format prints String whatever the verb, so that %x or %d cannot print the bytes.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(s.GoString()))
		return
	}
	_, _ = f.Write([]byte(s.String()))
}

// LogValue hides the value from log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText hides the value from encoding/json and other text encoders.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Security is the TLS and SASL setup of a member's Kafka client, read from Kafka's client keys.
// Config.ClientOptions and Security.Options turn it into franz-go options.
//
//   - security.protocol: PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL (any case, as in Kafka).
//   - sasl.mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512. Kafka's default, GSSAPI, is not
//     supported, so a SASL protocol needs the key.
//   - sasl.jaas.config: the PlainLoginModule or ScramLoginModule entry with username and password
//     (ScramLoginModule also takes tokenauth=true for delegation tokens), read as Kafka reads it
//     (ParseJAAS).
//   - ssl.truststore.location / .password / .type: the CAs that sign the brokers' certificates, a PEM
//     file of certificates (no password, as in Kafka) or a PKCS12 file. Without a truststore the
//     system's CAs are used, as a Java client uses the JVM's. Kafka's default type JKS cannot be
//     read: without the type key, the type is taken from the file (PEM text or PKCS12).
//   - ssl.keystore.location / .password / .type and ssl.key.password: the client certificate for
//     mutual TLS. PKCS12 (needs ssl.keystore.password; the key is under the same password, which is
//     all keytool makes) or PEM (the private key and its certificate chain in one file, no
//     ssl.keystore.password, as in Kafka; the key must not be encrypted).
//   - ssl.endpoint.identification.algorithm: https (default) checks the broker's host name against
//     its certificate; "" checks only that a trusted CA signed it, as in Kafka.
//
// A SASL or SSL key given with a protocol that does not use it is an error rather than ignored, so a
// forgotten security.protocol does not pass unseen. Passwords are Secrets.
type Security struct {
	Protocol           string // upper-cased; "" is PLAINTEXT
	SASLMechanism      string
	SASLLoginModule    string // the login module of sasl.jaas.config
	SASLUsername       string
	SASLPassword       Secret
	SASLTokenAuth      bool // ScramLoginModule tokenauth=true
	TruststoreLocation string
	TruststorePassword Secret
	TruststoreType     string // PEM, PKCS12, or "" for "from the file"
	KeystoreLocation   string
	KeystorePassword   Secret
	KeystoreType       string // PEM, PKCS12, or "" for "from the file"
	KeyPassword        Secret
	// SkipHostnameCheck is ssl.endpoint.identification.algorithm="": the broker's certificate must be
	// signed by a trusted CA but may name another host.
	SkipHostnameCheck bool

	// set records which keys were given, for the checks between keys.
	set map[string]bool
}

// String summarises the setup without any secret: "SASL_SSL, SCRAM-SHA-512 as alice, truststore ca.p12".
func (s Security) String() string {
	parts := []string{s.protocol()}
	if s.usesSASL() {
		parts = append(parts, fmt.Sprintf("%s as %s", s.SASLMechanism, s.SASLUsername))
	}
	if s.TruststoreLocation != "" {
		parts = append(parts, "truststore "+s.TruststoreLocation)
	}
	if s.KeystoreLocation != "" {
		parts = append(parts, "keystore "+s.KeystoreLocation)
	}
	if s.SkipHostnameCheck {
		parts = append(parts, "no host name check")
	}
	return strings.Join(parts, ", ")
}

func (s Security) protocol() string {
	if s.Protocol == "" {
		return ProtocolPlaintext
	}
	return s.Protocol
}

func (s Security) usesSASL() bool {
	return s.protocol() == ProtocolSASLPlaintext || s.protocol() == ProtocolSASLSSL
}

func (s Security) usesTLS() bool {
	return s.protocol() == ProtocolSSL || s.protocol() == ProtocolSASLSSL
}

// SecurityFromMap reads the security keys of m (IsSecurityKey) and ignores every other key: for a
// program that reads its other keys itself, as the streams-groups command does with
// --command-config. Problems are an *Error, as FromMap's. It does no I/O: files are read by Options.
func SecurityFromMap(m map[string]string) (Security, error) {
	var p problems
	s := parseSecurity(m, &p)
	s.validate(&p)
	return s, p.err()
}

const jaasForm = `write ` + ScramLoginModule + ` required username="…" password="…"; ` +
	`(PlainLoginModule for PLAIN)`

// parseSecurity reads the security keys of m into a Security, adding a problem for each bad value.
func parseSecurity(m map[string]string, p *problems) Security {
	var s Security
	for _, key := range securityKeys {
		raw, ok := m[key]
		if !ok {
			continue
		}
		if s.set == nil {
			s.set = map[string]bool{}
		}
		s.set[key] = true
		shown := raw
		if secretKeys[key] {
			shown = ""
		}
		// Kafka trims every value, passwords and sasl.jaas.config included (ConfigDef.parseType).
		val := strings.TrimSpace(raw)
		switch key {
		case KeySecurityProtocol:
			switch up := strings.ToUpper(val); up {
			case ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL:
				s.Protocol = up
			default:
				p.add(key, shown, "must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
			}
		case KeySASLMechanism:
			switch val {
			case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
				s.SASLMechanism = val
			case "GSSAPI", "OAUTHBEARER":
				p.add(key, shown, "%s is not supported by this client: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", val)
			default:
				if up := strings.ToUpper(val); up == MechanismPlain || up == MechanismScramSHA256 || up == MechanismScramSHA512 {
					p.add(key, shown, "did you mean %s? mechanism names are case-sensitive in Kafka", up)
				} else {
					p.add(key, shown, "must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
				}
			}
		case KeySASLJAASConfig:
			e, err := ParseJAAS(val)
			if err != nil {
				p.keys = append(p.keys, KeyError{Key: key, Reason: "cannot be read " + err.Error() + "; " + jaasForm, Err: err})
				continue
			}
			s.SASLLoginModule = e.LoginModule
			s.SASLUsername = e.Options["username"]
			s.SASLPassword = NewSecret(e.Options["password"])
			s.SASLTokenAuth = strings.EqualFold(e.Options["tokenauth"], "true")
		case KeySSLTruststoreLocation:
			s.TruststoreLocation = val
		case KeySSLKeystoreLocation:
			s.KeystoreLocation = val
		case KeySSLTruststorePassword:
			s.TruststorePassword = NewSecret(val)
		case KeySSLKeystorePassword:
			s.KeystorePassword = NewSecret(val)
		case KeySSLKeyPassword:
			s.KeyPassword = NewSecret(val)
		case KeySSLTruststoreType, KeySSLKeystoreType:
			t, reason := storeType(val)
			if reason != "" {
				p.add(key, shown, "%s", reason)
				continue
			}
			if key == KeySSLTruststoreType {
				s.TruststoreType = t
			} else {
				s.KeystoreType = t
			}
		case KeySSLEndpointIDAlg:
			switch {
			case val == "":
				s.SkipHostnameCheck = true
			case strings.EqualFold(val, "https"):
			default:
				p.add(key, shown, `must be https (check the broker's host name, the default) or empty (do not check it)`)
			}
		}
	}
	return s
}

func storeType(val string) (string, string) {
	switch up := strings.ToUpper(val); up {
	case StoreTypePEM, StoreTypePKCS12:
		return up, ""
	case "JKS":
		return "", "JKS stores cannot be read by this client: convert the store to PKCS12 (keytool -importkeystore " +
			"-srckeystore store.jks -destkeystore store.p12 -deststoretype PKCS12) and set the type to PKCS12, or use PEM"
	case "":
		return "", "is empty: set PEM or PKCS12, or leave the key out to take the type from the file"
	}
	return "", "must be PEM or PKCS12"
}

// validate checks the keys against each other. It does no I/O.
func (s *Security) validate(p *problems) {
	given := func(k string) bool { return s.set[k] }
	shown := func(k, v string) string {
		if secretKeys[k] {
			return ""
		}
		return v
	}
	proto := s.protocol()
	if !s.usesSASL() {
		for _, k := range []string{KeySASLMechanism, KeySASLJAASConfig} {
			if given(k) {
				p.add(k, shown(k, s.SASLMechanism), "has no effect with security.protocol=%s: set security.protocol=SASL_SSL "+
					"(or SASL_PLAINTEXT), or remove the key", proto)
			}
		}
	} else {
		switch {
		case !given(KeySASLMechanism):
			p.add(KeySASLMechanism, "", "is required with security.protocol=%s (Kafka's default GSSAPI is not supported): "+
				"set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", proto)
		case !given(KeySASLJAASConfig) && s.SASLMechanism != "":
			p.add(KeySASLJAASConfig, "", "is required with sasl.mechanism=%s: %s", s.SASLMechanism, jaasForm)
		}
		if given(KeySASLJAASConfig) && s.SASLLoginModule != "" {
			want := ScramLoginModule
			if s.SASLMechanism == MechanismPlain {
				want = PlainLoginModule
			}
			switch {
			case s.SASLLoginModule != PlainLoginModule && s.SASLLoginModule != ScramLoginModule:
				p.add(KeySASLJAASConfig, "", "the login module %s is not supported by this client: use %s or %s",
					text.Quote(s.SASLLoginModule), PlainLoginModule, ScramLoginModule)
			case s.SASLMechanism != "" && s.SASLLoginModule != want:
				p.add(KeySASLJAASConfig, "", "holds %s, but sasl.mechanism=%s needs %s", s.SASLLoginModule, s.SASLMechanism, want)
			case s.SASLUsername == "" || !s.SASLPassword.IsSet():
				p.add(KeySASLJAASConfig, "", `needs both username="…" and password="…" options`)
			}
		}
	}
	sslKeys := []string{KeySSLTruststoreLocation, KeySSLTruststorePassword, KeySSLTruststoreType, KeySSLKeystoreLocation,
		KeySSLKeystorePassword, KeySSLKeystoreType, KeySSLKeyPassword, KeySSLEndpointIDAlg}
	if !s.usesTLS() {
		for _, k := range sslKeys {
			if given(k) {
				p.add(k, "", "has no effect with security.protocol=%s: set security.protocol=SSL or SASL_SSL, or remove the key", proto)
			}
		}
		return
	}
	if s.TruststoreLocation == "" {
		for _, k := range []string{KeySSLTruststorePassword, KeySSLTruststoreType} {
			if given(k) {
				p.add(k, "", "is given without ssl.truststore.location: set the location of the truststore, or remove the key")
			}
		}
	} else if s.TruststoreType == StoreTypePEM && s.TruststorePassword.IsSet() {
		p.add(KeySSLTruststorePassword, "", "a PEM truststore has no password (Kafka refuses one): remove the key")
	}
	if s.KeystoreLocation == "" {
		for _, k := range []string{KeySSLKeystorePassword, KeySSLKeystoreType, KeySSLKeyPassword} {
			if given(k) {
				p.add(k, "", "is given without ssl.keystore.location: set the location of the keystore, or remove the key")
			}
		}
		return
	}
	switch s.KeystoreType {
	case StoreTypePEM:
		if s.KeystorePassword.IsSet() {
			p.add(KeySSLKeystorePassword, "", "a PEM keystore has no store password (Kafka refuses one): remove the key")
		}
	case StoreTypePKCS12:
		if !s.KeystorePassword.IsSet() {
			p.add(KeySSLKeystorePassword, "", "is required with a PKCS12 keystore: set the password of %s", text.QuotePath(s.KeystoreLocation))
		}
	}
	if s.KeyPassword.IsSet() && s.KeystorePassword.IsSet() && s.KeyPassword != s.KeystorePassword {
		p.add(KeySSLKeyPassword, "", "differs from ssl.keystore.password, but a PKCS12 keystore keeps its key under the store "+
			"password (keytool makes no other kind): remove ssl.key.password")
	}
}

// ClientOptions returns the franz-go options that connect to the cluster as this configuration says:
// kgo.SeedBrokers(bootstrap.servers...), kgo.DialTLSConfig and kgo.SASL as Security says, and
// kgo.ClientID when client.id is set. Add the application's own options after them:
//
//	opts, err := cfg.ClientOptions()
//	if err != nil { … }
//	cl, err := kgo.NewClient(append(opts, kgo.ClientID("my-app"))...)
//
// It reads the truststore and keystore files, so a missing file, a wrong store password or a file
// that does not decode is an *Error naming the key, before any connection is tried.
func (c Config) ClientOptions() ([]kgo.Opt, error) {
	if len(c.BootstrapServers) == 0 {
		return nil, &Error{Keys: []KeyError{{Key: KeyBootstrapServers, Reason: "is required to build a client: set host:port of one or more brokers"}}}
	}
	opts, err := c.Security.Options()
	if err != nil {
		return nil, err
	}
	opts = append([]kgo.Opt{kgo.SeedBrokers(c.BootstrapServers...)}, opts...)
	if c.ClientID != "" {
		opts = append(opts, kgo.ClientID(c.ClientID))
	}
	return opts, nil
}

// Options returns the franz-go options of the security setup: kgo.DialTLSConfig for SSL and
// SASL_SSL, kgo.SASL for the SASL protocols, nothing for PLAINTEXT. It reads the store files (see
// TLSConfig). Errors are an *Error naming the key.
func (s Security) Options() ([]kgo.Opt, error) {
	var p problems
	s.validate(&p)
	if err := p.err(); err != nil {
		return nil, err
	}
	var opts []kgo.Opt
	if s.usesTLS() {
		tc, err := s.TLSConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if s.usesSASL() {
		switch s.SASLMechanism {
		case MechanismPlain:
			opts = append(opts, kgo.SASL(plain.Auth{User: s.SASLUsername, Pass: s.SASLPassword.Reveal()}.AsMechanism()))
		case MechanismScramSHA256:
			opts = append(opts, kgo.SASL(scram.Auth{User: s.SASLUsername, Pass: s.SASLPassword.Reveal(), IsToken: s.SASLTokenAuth}.AsSha256Mechanism()))
		case MechanismScramSHA512:
			opts = append(opts, kgo.SASL(scram.Auth{User: s.SASLUsername, Pass: s.SASLPassword.Reveal(), IsToken: s.SASLTokenAuth}.AsSha512Mechanism()))
		}
	}
	return opts, nil
}

// TLSConfig builds the TLS configuration of SSL and SASL_SSL: TLS 1.2 or newer (Kafka's default
// ssl.enabled.protocols), the truststore's CAs (or the system's), the keystore's certificate, and
// the host name check unless ssl.endpoint.identification.algorithm is empty. kgo.DialTLSConfig sets
// the server name of each connection from the broker's address.
func (s Security) TLSConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	var p problems
	if s.TruststoreLocation != "" {
		if pool := s.loadTruststore(&p); pool != nil {
			tc.RootCAs = pool
		}
	}
	if s.KeystoreLocation != "" {
		if cert, ok := s.loadKeystore(&p); ok {
			tc.Certificates = []tls.Certificate{cert}
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	if s.SkipHostnameCheck {
		// Go has no switch for "verify the chain but not the name": skip its verification and do the
		// chain check here, with the same roots.
		roots := tc.RootCAs
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the broker sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			if err != nil {
				return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
			}
			return nil
		}
	}
	return tc, nil
}

// readStore reads a store file, adding a problem on the location key when it cannot.
func readStore(p *problems, key, path, what string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		p.keys = append(p.keys, KeyError{Key: key, Value: path, Err: err,
			Reason: fmt.Sprintf("cannot read the %s: %s: set it to the path of a PEM or PKCS12 file this process can read", what, fsReason(err))})
		return nil
	}
	return b
}

// detectType is the type of a store whose type key is not set: PEM text, or PKCS12 (DER).
func detectType(b []byte) string {
	if bytes.Contains(b, []byte("-----BEGIN ")) {
		return StoreTypePEM
	}
	return StoreTypePKCS12
}

// isJKS reports whether b is a Java KeyStore (magic 0xFEEDFEED), which Go cannot read.
func isJKS(b []byte) bool { return len(b) >= 4 && bytes.Equal(b[:4], []byte{0xFE, 0xED, 0xFE, 0xED}) }

const jksReason = "is a JKS store, which this client cannot read: convert it to PKCS12 (keytool -importkeystore " +
	"-srckeystore store.jks -destkeystore store.p12 -deststoretype PKCS12) or PEM"

func (s Security) loadTruststore(p *problems) *x509.CertPool {
	key, path := KeySSLTruststoreLocation, s.TruststoreLocation
	b := readStore(p, key, path, "truststore")
	if b == nil {
		return nil
	}
	typ := s.TruststoreType
	if typ == "" {
		typ = detectType(b)
	}
	var certs []*x509.Certificate
	switch {
	case isJKS(b):
		p.add(key, path, jksReason)
		return nil
	case typ == StoreTypePEM:
		for rest := b; ; {
			var blk *pem.Block
			blk, rest = pem.Decode(rest)
			if blk == nil {
				break
			}
			if blk.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				p.keys = append(p.keys, KeyError{Key: key, Value: path, Err: err,
					Reason: fmt.Sprintf("holds a certificate that does not parse (%v): export the CA certificates again", err)})
				return nil
			}
			certs = append(certs, c)
		}
		if len(certs) == 0 {
			p.add(key, path, "holds no PEM certificate (-----BEGIN CERTIFICATE-----): set it to the file of the CA certificates that sign the brokers' certificates")
			return nil
		}
	default:
		var err error
		certs, err = decodePKCS12Trust(b, s.TruststorePassword.Reveal())
		switch {
		case errors.Is(err, pkcs12.ErrIncorrectPassword):
			reason := "does not open the truststore " + text.QuotePath(path) + " (wrong password): set the password the truststore was written with"
			if !s.TruststorePassword.IsSet() {
				reason = "is required: the truststore " + text.QuotePath(path) + " has a password"
			}
			p.keys = append(p.keys, KeyError{Key: KeySSLTruststorePassword, Reason: reason, Err: pkcs12.ErrIncorrectPassword})
			return nil
		case err != nil:
			p.keys = append(p.keys, KeyError{Key: key, Value: path, Err: err,
				Reason: fmt.Sprintf("is not a PKCS12 truststore this client can read (%v): give a PEM file of CA certificates, or set ssl.truststore.type to the file's type", err)})
			return nil
		case len(certs) == 0:
			p.add(key, path, "holds no certificate: set it to the truststore of the CAs that sign the brokers' certificates")
			return nil
		}
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool
}

// decodePKCS12Trust reads the certificates of a PKCS12 truststore: a Java one (trusted-certificate
// entries), or, failing that, any PKCS12 file of certificates (openssl's).
func decodePKCS12Trust(b []byte, password string) ([]*x509.Certificate, error) {
	certs, err := pkcs12.DecodeTrustStore(b, password)
	if err == nil || errors.Is(err, pkcs12.ErrIncorrectPassword) {
		return certs, err
	}
	// ToPEM is deprecated for the way it encodes private keys; only its CERTIFICATE blocks are read
	// here, and DecodeChain cannot stand in: it refuses a file without a private key.
	//lint:ignore SA1019 see above
	blocks, err2 := pkcs12.ToPEM(b, password)
	if err2 != nil {
		if errors.Is(err2, pkcs12.ErrIncorrectPassword) {
			return nil, err2
		}
		return nil, err
	}
	certs = certs[:0]
	for _, blk := range blocks {
		if blk.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, err
			}
			certs = append(certs, c)
		}
	}
	return certs, nil
}

func (s Security) loadKeystore(p *problems) (tls.Certificate, bool) {
	key, path := KeySSLKeystoreLocation, s.KeystoreLocation
	b := readStore(p, key, path, "keystore")
	if b == nil {
		return tls.Certificate{}, false
	}
	typ := s.KeystoreType
	if typ == "" {
		typ = detectType(b)
	}
	switch {
	case isJKS(b):
		p.add(key, path, jksReason)
		return tls.Certificate{}, false
	case typ == StoreTypePEM:
		if s.KeystorePassword.IsSet() {
			p.add(KeySSLKeystorePassword, "", "a PEM keystore has no store password (Kafka refuses one): remove the key")
			return tls.Certificate{}, false
		}
		var certPEM, keyPEM []byte
		for rest := b; ; {
			var blk *pem.Block
			blk, rest = pem.Decode(rest)
			if blk == nil {
				break
			}
			switch {
			case blk.Type == "CERTIFICATE":
				certPEM = append(certPEM, pem.EncodeToMemory(blk)...)
			case blk.Type == "ENCRYPTED PRIVATE KEY":
				p.add(key, path, "holds an encrypted private key, which this client cannot decrypt: write the key unencrypted "+
					"(openssl pkcs8 -topk8 -nocrypt) and protect the file, or use a PKCS12 keystore")
				return tls.Certificate{}, false
			case strings.HasSuffix(blk.Type, "PRIVATE KEY"):
				keyPEM = append(keyPEM, pem.EncodeToMemory(blk)...)
			}
		}
		if s.KeyPassword.IsSet() {
			p.add(KeySSLKeyPassword, "", "the private key in %s is not encrypted: remove ssl.key.password", text.QuotePath(path))
			return tls.Certificate{}, false
		}
		if certPEM == nil || keyPEM == nil {
			p.add(key, path, "must hold the client's private key (-----BEGIN PRIVATE KEY-----) and its certificate chain in PEM")
			return tls.Certificate{}, false
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			p.keys = append(p.keys, KeyError{Key: key, Value: path, Err: err,
				Reason: fmt.Sprintf("its key and certificate do not make a pair (%v): put the certificate of this key first", err)})
			return tls.Certificate{}, false
		}
		return cert, true
	default:
		priv, leaf, cas, err := pkcs12.DecodeChain(b, s.KeystorePassword.Reveal())
		if errors.Is(err, pkcs12.ErrIncorrectPassword) {
			p.keys = append(p.keys, KeyError{Key: KeySSLKeystorePassword, Err: err,
				Reason: "does not open the keystore " + text.QuotePath(path) + " (wrong password): set the password the keystore was written with"})
			return tls.Certificate{}, false
		}
		if err != nil {
			p.keys = append(p.keys, KeyError{Key: key, Value: path, Err: err,
				Reason: fmt.Sprintf("is not a PKCS12 keystore this client can read (%v): it must hold one private key and its certificate chain", err)})
			return tls.Certificate{}, false
		}
		cert := tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: priv, Leaf: leaf}
		for _, c := range cas {
			cert.Certificate = append(cert.Certificate, c.Raw)
		}
		return cert, true
	}
}

// LoadSecurity reads the security keys of a properties file (SecurityFromMap; other keys are
// ignored), for a program that takes a client properties file beside its own flags, as the examples
// do with -config. Use Options on the result.
func LoadSecurity(path string) (Security, error) {
	f, err := os.Open(path)
	if err != nil {
		return Security{}, fmt.Errorf("client properties %s: %s", text.QuotePath(path), fsReason(err))
	}
	defer f.Close()
	m, err := ParseProperties(f)
	if err != nil {
		return Security{}, fmt.Errorf("client properties %s: %w", text.QuotePath(path), err)
	}
	s, err := SecurityFromMap(m)
	if err != nil {
		return Security{}, fmt.Errorf("client properties %s: %w", text.QuotePath(path), err)
	}
	return s, nil
}
