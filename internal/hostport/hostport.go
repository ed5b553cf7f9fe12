// Package hostport reads host:port addresses as Kafka's clients do (bootstrap.servers,
// application.server), for config and the streams-groups CLI.
package hostport

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/streamsgroup/streamsgroup/internal/text"
)

// Split splits a comma-separated list of servers as Kafka's LIST type does: each entry is
// trimmed and empty entries are dropped.
func Split(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// Check checks one host:port address (an entry of bootstrap.servers, or application.server)
// and returns its host and port, or an error saying what is wrong. The error does not repeat s.
//
// The rules are Kafka's (ClientUtils.parseAndValidateAddresses, Utils.getHost/getPort): the host is
// made of ASCII letters, digits, '-', '.', '_' and '%'; an IPv6 address is in brackets, [::1]:9092;
// the port is required (Kafka's clients do not default it) and at most 65535. Stricter than Kafka: a
// port of 0 is refused (nothing listens there), and so is a scheme prefix such as PLAINTEXT://, which
// Kafka ignores: the security protocol is set on the client, and SSL:// silently meaning plaintext
// would mislead.
func Check(s string) (host string, port uint16, err error) {
	if i := strings.IndexAny(s, "; \t"); i >= 0 {
		return "", 0, fmt.Errorf("holds %s: separate servers with commas (host1:9092,host2:9092)", text.RuneName(rune(s[i])))
	}
	if i := strings.Index(s, "://"); i >= 0 {
		return "", 0, fmt.Errorf("has a scheme prefix %s: give host:port only (the security protocol is set on the client)", text.Quote(s[:i+3]))
	}
	var rest string
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, errors.New("has '[' without ']': write an IPv6 address as [::1]:9092")
		}
		host, rest = s[1:end], s[end+1:]
		if host == "" {
			return "", 0, errors.New("host is empty")
		}
		if bad := text.FirstIllegal(host, func(r rune) bool { return hostChar(r) || r == ':' }); bad != "" {
			return "", 0, fmt.Errorf("%s is not allowed in a host (letters, digits, '-', '.', '_', '%%', and ':' in an IPv6 address)", bad)
		}
		if rest == "" {
			return "", 0, errors.New("has no port: write [host]:port (Kafka's clients require the port; brokers usually listen on 9092)")
		}
		if rest[0] != ':' {
			return "", 0, fmt.Errorf("has %s after ']': write [host]:port", text.Quote(rest))
		}
		rest = rest[1:]
	} else {
		i := strings.LastIndexByte(s, ':')
		if i < 0 {
			return "", 0, errors.New("has no port: write host:port (Kafka's clients require the port; brokers usually listen on 9092)")
		}
		host, rest = s[:i], s[i+1:]
		if strings.Contains(host, ":") {
			return "", 0, errors.New("has more than one ':': give one port, and an IPv6 address in brackets: [::1]:9092")
		}
		if host == "" {
			return "", 0, errors.New("host is empty")
		}
		if bad := text.FirstIllegal(host, hostChar); bad != "" {
			return "", 0, fmt.Errorf("%s is not allowed in a host (letters, digits, '-', '.', '_', '%%')", bad)
		}
	}
	p, err := parsePort(rest)
	if err != nil {
		return "", 0, err
	}
	return host, p, nil
}

func hostChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' || r == '%'
}

func parsePort(s string) (uint16, error) {
	if s == "" {
		return 0, errors.New("port is empty")
	}
	if bad := text.FirstIllegal(s, func(r rune) bool { return r >= '0' && r <= '9' }); bad != "" {
		return 0, fmt.Errorf("port %s is not a number (%s)", text.Quote(s), bad)
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("port %s is out of range: ports are 1 to 65535", text.Quote(s))
	}
	if n == 0 {
		return 0, errors.New("port 0 is not allowed: ports are 1 to 65535")
	}
	return uint16(n), nil
}
