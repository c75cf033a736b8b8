package store

import "math"

// pageWindow is the LIMIT and OFFSET arguments of page page (from 1) of limit rows, both
// positive. A page whose offset does not fit in int64 starts past any row there can be, so its
// window is empty (LIMIT 0 OFFSET 0): it answers like any other page past the last one, with no
// rows and the right total, instead of wrapping around to a negative offset (which SQLite reads
// as 0, the first page, and PostgreSQL refuses).
func pageWindow(page, limit int) []any {
	p, l := int64(page), int64(limit)
	if p-1 > math.MaxInt64/l {
		return []any{int64(0), int64(0)}
	}
	return []any{l, (p - 1) * l}
}
