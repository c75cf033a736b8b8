package main

import (
	"slices"
	"time"
)

// percentile returns the nearest-rank p-th percentile (0 < p ≤ 100) of d, which it sorts in
// place. An empty slice gives 0.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[rank(len(d), p)]
}

// rank is the index of the nearest-rank p-th percentile in a sorted slice of n values.
func rank(n int, p float64) int {
	i := int(float64(n)*p/100+0.999999999) - 1
	return min(max(i, 0), n-1)
}

// median returns the median of xs (the mean of the two middle values for an even count),
// without changing xs. An empty slice gives 0.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// us converts a duration to microseconds as a float.
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// spread returns the smallest and largest of xs.
func spread(xs []float64) (lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	return slices.Min(xs), slices.Max(xs)
}
