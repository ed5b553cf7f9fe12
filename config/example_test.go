package config_test

import (
	"fmt"
	"strings"

	"github.com/streamsgroup/streamsgroup/config"
)

func ExampleFromProperties() {
	cfg, err := config.FromProperties(strings.NewReader(`
application.id=wordcount
bootstrap.servers=127.0.0.1:9092
topology.epoch=0
max.poll.interval.ms=60000
client.tag.zone=eu-1
`))
	if err != nil {
		panic(err)
	}
	fmt.Println(cfg.ApplicationID, cfg.BootstrapServers, cfg.MaxPollInterval, cfg.ClientTags)

	_, err = config.FromMap(map[string]string{"application.id": "a b", "retry.backoff.ms": "soon", "typo.key": "1"})
	fmt.Println(err)
	// Output:
	// wordcount [127.0.0.1:9092] 1m0s map[zone:eu-1]
	// invalid configuration: "application.id"="a b": character ' ' (U+0020) is not one of [a-zA-Z0-9._-] (it prefixes internal topic names); "retry.backoff.ms"="soon": not a whole number of milliseconds (Kafka reads it as a LONG); "typo.key"="1": unknown key (keys for the application's own use start with "user.")
}
