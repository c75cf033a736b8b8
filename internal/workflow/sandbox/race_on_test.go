//go:build race

package sandbox_test

// raceEnabled: the tests (and the JavaScript worker, which is the test binary) run under the
// race detector.
const raceEnabled = true
