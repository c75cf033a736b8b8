package filetools

import (
	"strings"
	"testing"
)

// FuzzPageList: any page list is read, or refused with a reason, without panic; what is read
// is at most the limit of page numbers, each within the PDF.
func FuzzPageList(f *testing.F) {
	for _, s := range []string{"1-3,5,1-2", "-", "-2", "3-", " 1 , 2 ", ",,", "1-3-5", "99999999999999999999", "-0", "2-1", "1-100,1-100"} {
		f.Add(s, 7)
	}
	f.Fuzz(func(t *testing.T, spec string, total int) {
		total = 1 + int(uint(total)%1000)
		const limit = 100
		pages, err := parsePages(spec, total, limit)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a reason")
			}
			return
		}
		if len(pages) > limit || (len(pages) == 0 && strings.Trim(spec, " ") != "") {
			t.Fatalf("%q: %d pages", spec, len(pages))
		}
		for _, p := range pages {
			if p < 1 || p > total {
				t.Fatalf("%q: page %d of %d", spec, p, total)
			}
		}
	})
}
