package store_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/store/storetest"
	"github.com/streamsgroup/streamsgroup/tasks"
)

func TestMemoryContract(t *testing.T) {
	if store.Memory.Name() != "memory" || store.Memory.Persistent() {
		t.Fatalf("Memory is %q, persistent %v; want \"memory\", not persistent", store.Memory.Name(), store.Memory.Persistent())
	}
	var n atomic.Int64
	storetest.Run(t, store.Memory, func(t *testing.T) store.Location {
		return store.Location{
			ApplicationID: "app",
			Task:          tasks.ID{Subtopology: "0", Partition: int32(n.Add(1))},
			Store:         fmt.Sprintf("store-%d", n.Load()),
		}
	})
}
