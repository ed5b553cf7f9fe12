//go:build unix

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/streamsgroup/streamsgroup/integration/chaos"
	"github.com/streamsgroup/streamsgroup/integration/hanging"
	"github.com/streamsgroup/streamsgroup/topology"
)

// endHanging runs beside the exactly-once app until ctx ends and detects every transaction the
// broker leaves hanging on the app's topics and the group's offsets, each one logged as a DKHang
// (which fails S4). Only a run about the single-node broker limitation (HANGS=abort, see the
// README) writes the ABORT marker of an aborted one instead (DKMarker).
func (d *driver) endHanging(ctx context.Context) {
	looks := 0
	defer func() { d.log.write(chaos.DriverRecord{Kind: chaos.DKHangLooks, Looks: looks}) }()
	e := &hanging.Ender{
		Repair: d.cfg.RepairHangs,
		Looked: func() { looks++ }, // on Run's goroutine, which returns before the deferred write
		Found: func(m hanging.Marker) {
			what := "hanging transaction (the driver writes nothing): it needs the " + m.String()
			fmt.Printf("chaos: %s\n", what)
			d.log.write(chaos.DriverRecord{Kind: chaos.DKHang, Detail: what})
		},
		Seeds: d.broker.addrs,
		Topics: []string{topology.Names{AppID: d.cfg.Group}.ChangelogTopic(chaos.EOSStore), chaos.EOSOutput,
			topology.Names{AppID: d.cfg.Group}.ChangelogTopic(chaos.EOSWindowStore), chaos.EOSWindowOutput, "__consumer_offsets"},
		Interval: 2 * time.Second,
		// The coordinator writes markers within milliseconds of its decision.
		Grace: 5 * time.Second,
		Wrote: func(m hanging.Marker, err error) {
			what := "ended a hanging transaction: wrote the " + m.String()
			if err != nil {
				what = fmt.Sprintf("could not write the %v: %v", m, err)
			}
			fmt.Printf("chaos: %s\n", what)
			d.log.write(chaos.DriverRecord{Kind: chaos.DKMarker, Detail: what})
		},
	}
	if err := e.Run(ctx); err != nil {
		fmt.Printf("chaos: following the transaction log: %v\n", err)
	}
}
