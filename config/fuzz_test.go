package config

import (
	"errors"
	"strings"
	"testing"
)

// FuzzProperties feeds arbitrary text to the properties parser and the config builder: neither may
// panic, and every failure must be one of the package's typed errors.
func FuzzProperties(f *testing.F) {
	for _, seed := range []string{
		"application.id=app\nbootstrap.servers=127.0.0.1:9092\n",
		"a\\\n b\\u0041=c\\\\\n#x\n!y\n",
		"topology.epoch=99999999999\nmax.poll.interval.ms=-5\n",
		"client.tag.=\nuser.x=y\nprocess.id=\\uZZZZ",
		"retry.backoff.ms=9223372036854775807",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ParseProperties(strings.NewReader(in))
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("untyped parse error %T: %v", err, err)
			}
			return
		}
		c, err := FromMap(m)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || len(ce.Keys) == 0 {
				t.Fatalf("untyped config error %T: %v", err, err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("FromMap returned a config that Validate rejects: %v", err)
		}
	})
}
