package version

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "fd5dce6a1b2c3d4e5f60718293a4b5c6d7e8f901"}}
	tests := []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		want   string
	}{
		{"linker setting wins", "v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-x"}}, "v1.2.3"},
		{"module version", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261128171612-fd5dce6a1b2c+dirty"}},
			"v0.0.0-20261128171612-fd5dce6a1b2c+dirty"},
		{"commit when the module version is (devel)", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev},
			"devel-fd5dce6a1b2c"},
		{"uncommitted changes", "", &debug.BuildInfo{Settings: append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"})},
			"devel-fd5dce6a1b2c+dirty"},
		{"nothing recorded", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, Unknown},
		{"no build info", "", nil, Unknown},
	}
	for _, tt := range tests {
		if got := resolve(tt.linked, tt.bi); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
