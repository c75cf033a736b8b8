package dsl

import (
	"fmt"
	"strconv"
	"strings"
)

// Versions Parley reads. Files of 0.1.0 through 0.7.0 have been seen in the wild; within that
// range the parts Parley reads changed only by additions, so one reader serves them all. Dify
// itself takes any 0.x file, warning when it is older and asking for confirmation when it is
// newer than its own; Parley refuses what it has not seen, rather than guess.
const (
	MinVersion = "0.1.0"
	MaxVersion = "0.7.0"
	// DefaultVersion is what a file without a version field is taken to be, as Dify does.
	DefaultVersion = "0.1.0"
	// ExportVersion is the version written for apps that were not imported (config apps).
	ExportVersion = MaxVersion
)

// version is a parsed X.Y.Z version.
type version [3]int

// parseVersion reads "X.Y.Z" or "X.Y" (taken as X.Y.0).
func parseVersion(s string) (version, bool) {
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return version{}, false
	}
	var v version
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || p[0] == '+' {
			return version{}, false
		}
		v[i] = n
	}
	return v, true
}

func (v version) less(w version) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] < w[i]
		}
	}
	return false
}

func (v version) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

// checkVersion validates the version field's text; the caller has checked it is a string.
func checkVersion(s string) error {
	v, ok := parseVersion(s)
	if !ok {
		return fmt.Errorf("%q is not a DSL version (X.Y.Z)", s)
	}
	minV, _ := parseVersion(MinVersion)
	maxV, _ := parseVersion(MaxVersion)
	switch {
	case v[0] != 0:
		return fmt.Errorf("DSL version %s is not supported: Parley reads versions %s through %s, and a new major version may change what fields mean",
			s, MinVersion, MaxVersion)
	case maxV.less(v):
		return fmt.Errorf("DSL version %s is newer than Parley reads (%s through %s); export the app again from an older Dify, or upgrade Parley",
			s, MinVersion, MaxVersion)
	case v.less(minV):
		return fmt.Errorf("DSL version %s is older than Parley reads (%s through %s)", s, MinVersion, MaxVersion)
	}
	return nil
}
