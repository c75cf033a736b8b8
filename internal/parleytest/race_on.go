//go:build race

package parleytest

// RaceEnabled says the race detector is on: it adds allocations of its own.
const RaceEnabled = true
