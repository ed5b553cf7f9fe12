package topology

import (
	"errors"
	"strings"
	"testing"
)

func TestWithGlobalStores(t *testing.T) {
	base := MustNew(Subtopology{ID: "1", SourceTopics: []string{"in"}, RepartitionSinkTopics: []string{"app-r-repartition"}},
		Subtopology{ID: "2", RepartitionSourceTopics: []TopicInfo{{Name: "app-r-repartition"}},
			StateChangelogTopics: []TopicInfo{{Name: "app-s-changelog"}}})
	good := GlobalStore{Subtopology: "0", Name: "g", Topic: "g-in"}
	got, err := base.WithGlobalStores(good, GlobalStore{Subtopology: "3", Name: "h", Topic: "h-in"})
	if err != nil {
		t.Fatal(err)
	}
	if gs := got.GlobalStores(); len(gs) != 2 || gs[0] != good || gs[1].Name != "h" {
		t.Fatalf("GlobalStores = %+v", gs)
	}
	// Not in the heartbeat: the ID, the subtopologies and the request are the topology's own.
	if got.ID() != base.ID() || !got.Equal(base) || len(base.GlobalStores()) != 0 {
		t.Fatal("global stores changed the topology the broker sees, or the original")
	}
	if rf := got.WithReplicationFactor(3); len(rf.GlobalStores()) != 2 {
		t.Fatal("WithReplicationFactor dropped the global stores")
	}
	if j := got.ForJava(Java19Plus); len(j.GlobalStores()) != 2 {
		t.Fatal("ForJava dropped the global stores")
	}
	gs := got.GlobalStores()
	gs[0].Name = "changed"
	if got.GlobalStores()[0].Name != "g" {
		t.Fatal("GlobalStores returned the topology's own slice")
	}

	for _, tc := range []struct {
		gs   []GlobalStore
		want string
	}{
		{[]GlobalStore{{Subtopology: "0", Name: "g"}}, "needs a name, a topic and a subtopology ID"},
		{[]GlobalStore{{Subtopology: "0", Topic: "t"}}, "needs a name, a topic and a subtopology ID"},
		{[]GlobalStore{{Name: "g", Topic: "t"}}, "needs a name, a topic and a subtopology ID"},
		{[]GlobalStore{good, {Subtopology: "3", Name: "g", Topic: "t"}}, `store "g" is declared twice`},
		{[]GlobalStore{good, {Subtopology: "0", Name: "h", Topic: "t"}}, `subtopology "0" keeps two global stores`},
		{[]GlobalStore{{Subtopology: "2", Name: "g", Topic: "t"}}, `subtopology "2" is a subtopology of the topology`},
		{[]GlobalStore{{Subtopology: "0", Name: "g", Topic: "in"}}, `topic "in" is read or written`},
		{[]GlobalStore{{Subtopology: "0", Name: "g", Topic: "app-r-repartition"}}, `topic "app-r-repartition" is read or written`},
		{[]GlobalStore{{Subtopology: "0", Name: "g", Topic: "app-s-changelog"}}, `topic "app-s-changelog" is read or written`},
		{[]GlobalStore{good, {Subtopology: "3", Name: "h", Topic: "g-in"}}, `topic "g-in" is read or written`},
	} {
		_, err := base.WithGlobalStores(tc.gs...)
		if !errors.Is(err, ErrGlobalStore) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WithGlobalStores(%+v) = %v, want ErrGlobalStore: %q", tc.gs, err, tc.want)
		}
	}
}
