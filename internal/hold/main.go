package main

import (
	"context"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/topology"
)

func main() {
	bs := os.Getenv("STREAMSGROUP_BOOTSTRAP")
	cl, _ := kgo.NewClient(kgo.SeedBrokers(bs))
	kadm.NewClient(cl).CreateTopic(context.Background(), 4, 1, nil, "hold-in3")
	n := topology.Names{AppID: "hold-app3"}
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"hold-in3"}, StateChangelogTopics: []topology.TopicInfo{n.KeyValueChangelog("st")}})
	for i := 0; i < 2; i++ {
		c, _ := kgo.NewClient(kgo.SeedBrokers(bs))
		cfg := config.Default("hold-app3")
		cfg.ApplicationServer = "localhost:808" + string(rune('0'+i))
		m, _ := membership.New(c, cfg, topo)
		m.Start(context.Background())
	}
	time.Sleep(90 * time.Second)
}
