package hostport

import (
	"slices"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ,", nil},
		{"a:1", []string{"a:1"}},
		{" a:1 ,b:2,, c:3 ", []string{"a:1", "b:2", "c:3"}},
		{"\ta:1\n", []string{"a:1"}},
	} {
		if got := Split(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Split(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCheckAccepts(t *testing.T) {
	for _, c := range []struct {
		in   string
		host string
		port uint16
	}{
		{"localhost:9092", "localhost", 9092},
		{"h:1", "h", 1},
		{"h:65535", "h", 65535},
		{"h:09092", "h", 9092}, // Kafka reads the port as a decimal number
		{"my-host_1.example.com:80", "my-host_1.example.com", 80},
		{"fe80%eth0:80", "fe80%eth0", 80},
		{"Z9:2", "Z9", 2},
		{"[::1]:9092", "::1", 9092},
		{"[fe80::1%eth0]:9093", "fe80::1%eth0", 9093},
		{"127.0.0.1:9092", "127.0.0.1", 9092},
	} {
		host, port, err := Check(c.in)
		if err != nil || host != c.host || port != c.port {
			t.Errorf("Check(%q) = %q, %d, %v; want %q, %d", c.in, host, port, err, c.host, c.port)
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"localhost", "has no port: write host:port (Kafka's clients require the port; brokers usually listen on 9092)"},
		{"[::1]", "has no port: write [host]:port"},
		{"h:", "port is empty"},
		{"[::1]:", "port is empty"},
		{"h:0", "port 0 is not allowed: ports are 1 to 65535"},
		{"h:65536", `port "65536" is out of range: ports are 1 to 65535`},
		{"h:-1", `port "-1" is not a number (character '-' (U+002D))`},
		{"h:8a", `port "8a" is not a number (character 'a' (U+0061))`},
		{":9092", "host is empty"},
		{"[]:9092", "host is empty"},
		{"h/x:9092", "character '/' (U+002F) is not allowed in a host (letters, digits, '-', '.', '_', '%')"},
		{"h{:9092", "'{' (U+007B) is not allowed in a host"},
		{"h`:9092", "'`' (U+0060) is not allowed in a host"},
		{"h@:9092", "'@' (U+0040) is not allowed in a host"},
		{"h[:9092", "'[' (U+005B) is not allowed in a host"},
		{"h/:9092", "'/' (U+002F)"},
		{"h::9092", "has more than one ':'"},
		{"[::1]x:9092", `has "x:9092" after ']': write [host]:port`},
		{"[a/b]:9092", "and ':' in an IPv6 address"},
		{"[::1:9092", "has '[' without ']'"},
		{"a:1;b:2", "holds ';' (U+003B): separate servers with commas"},
		{"a:1 b:2", "holds ' ' (U+0020)"},
		{"a:1\tb:2", `holds '\t' (U+0009)`},
		{"SSL://h:9092", `has a scheme prefix "SSL://": give host:port only (the security protocol is set on the client)`},
	} {
		host, port, err := Check(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%q) = %v, want an error with %q", c.in, err, c.want)
			continue
		}
		if host != "" || port != 0 {
			t.Errorf("Check(%q) refused but returned %q, %d", c.in, host, port)
		}
		if strings.Contains(err.Error(), c.in) && len(c.in) > 3 {
			t.Errorf("Check(%q): the error repeats the address: %v", c.in, err)
		}
	}
}

// hostChar is Kafka's host alphabet exactly: every ASCII character, one by one.
func TestHostCharIsKafkasAlphabet(t *testing.T) {
	for r := rune(0); r < 128; r++ {
		want := strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._%", r)
		if got := hostChar(r); got != want {
			t.Errorf("hostChar(%q) = %v, want %v", r, got, want)
		}
	}
}

// A separator or a scheme at the very start is found there too.
func TestCheckRefusesAtTheFirstCharacter(t *testing.T) {
	for in, want := range map[string]string{
		";h:9092":   "holds ';' (U+003B)",
		" h:9092":   "holds ' ' (U+0020)",
		"://h:9092": `has a scheme prefix "://"`,
	} {
		if _, _, err := Check(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%q) = %v, want %q", in, err, want)
		}
	}
}
