package topology

import "encoding/json"

// The JSON form of a topology, for files and the streams-groups tool:
//
//	{"subtopologies": [
//	  {"id": "0", "sourceTopics": ["words"], "repartitionSinkTopics": ["app-by-word-repartition"]},
//	  {"id": "1",
//	   "repartitionSourceTopics": [{"name": "app-by-word-repartition", "partitions": 0,
//	       "replicationFactor": -1, "configs": {"cleanup.policy": "delete"}}],
//	   "stateChangelogTopics": [{"name": "app-counts-changelog", "configs": {"cleanup.policy": "compact"}}],
//	   "copartitionGroups": [["a", "b"]]}
//	]}
type jsonTopology struct {
	Subtopologies []jsonSubtopology `json:"subtopologies"`
}

type jsonSubtopology struct {
	ID                      string      `json:"id"`
	SourceTopics            []string    `json:"sourceTopics,omitempty"`
	SourceTopicRegexes      []string    `json:"sourceTopicRegexes,omitempty"`
	RepartitionSinkTopics   []string    `json:"repartitionSinkTopics,omitempty"`
	RepartitionSourceTopics []jsonTopic `json:"repartitionSourceTopics,omitempty"`
	StateChangelogTopics    []jsonTopic `json:"stateChangelogTopics,omitempty"`
	CopartitionGroups       [][]string  `json:"copartitionGroups,omitempty"`
}

type jsonTopic struct {
	Name              string            `json:"name"`
	Partitions        int32             `json:"partitions,omitempty"`
	ReplicationFactor int16             `json:"replicationFactor,omitempty"`
	Configs           map[string]string `json:"configs,omitempty"`
}

func toJSONTopics(in []TopicInfo) []jsonTopic {
	var out []jsonTopic
	for _, ti := range in {
		out = append(out, jsonTopic(ti))
	}
	return out
}

// subtopologiesJSON renders subtopologies in the JSON form.
func subtopologiesJSON(subs []Subtopology) jsonTopology {
	out := jsonTopology{Subtopologies: []jsonSubtopology{}}
	for _, s := range subs {
		out.Subtopologies = append(out.Subtopologies, jsonSubtopology{
			ID: s.ID, SourceTopics: s.SourceTopics, SourceTopicRegexes: s.SourceTopicRegexes,
			RepartitionSinkTopics:   s.RepartitionSinkTopics,
			RepartitionSourceTopics: toJSONTopics(s.RepartitionSourceTopics),
			StateChangelogTopics:    toJSONTopics(s.StateChangelogTopics),
			CopartitionGroups:       s.CopartitionGroups,
		})
	}
	return out
}

// MarshalJSON renders the topology in the JSON form documented on ReadJSON.
func (t *Topology) MarshalJSON() ([]byte, error) { return json.Marshal(subtopologiesJSON(t.subs)) }

// MarshalJSON renders a described topology in the same JSON form, with its epoch and topology ID.
func (d *Described) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Epoch      int32  `json:"epoch"`
		TopologyID string `json:"topologyId"`
		jsonTopology
	}{d.Epoch, d.ID.Hex(), subtopologiesJSON(d.Subtopologies)})
}
