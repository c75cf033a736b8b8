//go:build race

package store

// raceEnabled: the tests run under the race detector, whose sync.Pool drops a share of what is
// put back, so pooled buffers are allocated again.
const raceEnabled = true
