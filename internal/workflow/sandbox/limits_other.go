//go:build !linux

package sandbox

func applyLimits(int64, int64, int64, int) error { return nil }
