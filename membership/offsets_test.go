package membership

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsgroup/streamsgroup/tasks"
)

// Task offset scenarios of PROTOCOL §8 / §11.2 (Kafka 4.4 additions).

func offsetsHarness(t *testing.T) *harness {
	return newHarness(t, func(c *MachineConfig) { c.Member.SupportsV1Offsets = true })
}

// resp44 is an answer of a 4.4 broker: recovery lag 100, offset interval 15 s.
func (h *harness) answer44(epoch int32, a *tasks.Assignment) {
	r := resp(epoch, a)
	r.AcceptableRecoveryLag = 100
	r.TaskOffsetIntervalMillis = 15000
	h.answer(r)
}

func offs(pairs ...any) tasks.Offsets {
	o := tasks.Offsets{}
	for i := 0; i < len(pairs); i += 2 {
		id, _ := tasks.ParseID(pairs[i].(string))
		o[id] = int64(pairs[i+1].(int))
	}
	return o
}

func TestTaskOffsetScenarios(t *testing.T) {
	cases := []struct {
		name string
		run  func(h *harness)
	}{
		{"testJoiningRecordsSentOffsetsSoFollowUpHeartbeatSkipsUnchanged", func(h *harness) {
			h.start()
			if !h.m.WantsOffsets(h.now) {
				h.t.Fatal("a join wants offsets")
			}
			req := h.tickOffsets(offs("0_0", 5), offs("0_0", 9))
			if len(req.TaskOffsets) != 1 || len(req.TaskEndOffsets) != 1 {
				h.t.Fatal("join carries offsets")
			}
			h.answer44(1, active("0_0"))
			h.complete(nil)
			req = h.tickOffsets(offs("0_0", 5), offs("0_0", 9)) // the ack: assignment changed, offsets unchanged
			if req.TaskOffsets != nil || req.TaskEndOffsets != nil {
				h.t.Fatal("unchanged offsets were resent")
			}
		}},
		{"testTaskOffsetIntervalNotAdvancedWhenNothingSent", func(h *harness) {
			h.start()
			h.tick() // join without offsets (no provider data)
			h.answer44(1, active("0_0"))
			h.complete(nil)
			h.tick()
			h.answer44(1, nil)
			h.advance(15 * time.Second)
			if !h.m.WantsOffsets(h.now) {
				h.t.Fatal("nothing was ever sent, so offsets are due")
			}
		}},
		{"testTaskOffsetReportingCadenceConditionsInterplay", func(h *harness) {
			h.start()
			h.tickOffsets(offs("0_0", 1), offs("0_0", 1000))
			h.answer44(1, active("0_0"))
			h.complete(nil)
			h.tickOffsets(offs("0_0", 1), offs("0_0", 1000))
			h.answer44(1, nil)
			h.advance(interval)
			if h.m.WantsOffsets(h.now) {
				h.t.Fatal("no trigger holds: offsets must not be asked for")
			}
			if req := h.tickOffsets(offs("0_0", 2), offs("0_0", 1000)); req.TaskOffsets != nil {
				h.t.Fatal("changed offsets are not sent before the interval")
			}
			h.answer44(1, nil)
			h.advance(15 * time.Second)
			if req := h.tickOffsets(offs("0_0", 2), offs("0_0", 1000)); req.TaskOffsets == nil || req.TaskEndOffsets != nil {
				h.t.Fatal("after the interval only the changed list goes")
			}
		}},
		{"testTaskOffsetsReportedForStandbyAndWarmupTasks", func(h *harness) {
			h.start()
			req := h.tickOffsets(offs("0_0", 1, "1_0", 2, "0_1", 3), offs("0_0", 1, "1_0", 2, "0_1", 3))
			if len(req.TaskOffsets) != 3 {
				h.t.Fatal("every task the provider reports is sent")
			}
		}},
		{"testHotWarmupTaskTriggersSendWhenLagAtOrBelowThreshold", func(h *harness) {
			h.start()
			h.tickOffsets(offs("0_0", 0), offs("0_0", 1000))
			h.answer44(1, warmup("0_0"))
			h.complete(nil)
			h.tickOffsets(offs("0_0", 0), offs("0_0", 1000))
			h.answer44(1, nil)
			h.advance(interval)
			if !h.m.WantsOffsets(h.now) {
				h.t.Fatal("a member with warm-ups checks their lag every heartbeat")
			}
			if req := h.tickOffsets(offs("0_0", 850), offs("0_0", 1000)); req.TaskOffsets != nil {
				h.t.Fatal("lag 150 > 100: not hot yet")
			}
			h.answer44(1, nil)
			h.advance(interval)
			if req := h.tickOffsets(offs("0_0", 900), offs("0_0", 1000)); req.TaskOffsets == nil {
				h.t.Fatal("lag 100 <= 100: hot, offsets go at once")
			}
		}},
		{"testHotWarmupTaskDisabledWhenOffsetOrEndOffsetOverflowed", func(h *harness) {
			h.start()
			h.tickOffsets(offs("0_0", 0), offs("0_0", 1000))
			h.answer44(1, warmup("0_0"))
			h.complete(nil)
			h.tickOffsets(offs("0_0", 0), offs("0_0", 1000))
			h.answer44(1, nil)
			h.advance(interval)
			over := tasks.Offsets{{Subtopology: "0", Partition: 0}: tasks.UnknownOffset}
			if h.m.hotWarmup(over, offs("0_0", 5)) || h.m.hotWarmup(offs("0_0", 5), over) || h.m.hotWarmup(nil, offs("0_0", 5)) ||
				h.m.hotWarmup(offs("1_0", 5), offs("1_0", 5)) {
				h.t.Fatal("unknown or missing offsets never make a warm-up hot")
			}
			h.m.acceptableLag = -1
			if h.m.hotWarmup(offs("0_0", 5), offs("0_0", 5)) {
				h.t.Fatal("a negative acceptable lag disables hot warm-ups")
			}
		}},
		{"testTaskOffsetsResentAfterReset", func(h *harness) {
			h.start()
			h.tickOffsets(offs("0_0", 1), offs("0_0", 2))
			h.answer44(1, active("0_0"))
			h.complete(nil)
			h.tickOffsets(offs("0_0", 1), offs("0_0", 2))
			h.fail(int16(kerr.NotCoordinator.Code))
			h.advance(time.Second)
			if req := h.tickOffsets(offs("0_0", 1), offs("0_0", 2)); req.TaskOffsets == nil || req.TaskEndOffsets == nil {
				h.t.Fatal("after an error offsets are resent in full")
			}
		}},
		{"olderBrokerGetsNoOffsets", func(h *harness) {
			h.start()
			h.tickOffsets(offs("0_0", 1), offs("0_0", 2))
			r := resp(1, active("0_0"))
			r.Version = 0 // 4.2/4.3: v0 answer, no recovery lag
			h.answer(r)
			h.complete(nil)
			if h.m.WantsOffsets(h.now) {
				h.t.Fatal("a v0 broker must never be asked for offsets")
			}
			if req := h.tickOffsets(offs("0_0", 1), offs("0_0", 2)); req.TaskOffsets != nil {
				h.t.Fatal("offsets sent to a v0 broker")
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(offsetsHarness(t)) })
	}
}
