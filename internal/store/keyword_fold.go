package store

import (
	"golang.org/x/text/cases"
)

// foldKeyword is the form a keyword has in the keyword index: its Unicode case folding, so that
// `penguins` finds a chunk whose keyword is `Penguins`, `straße` one with `STRASSE` and `οδος`
// one with `ΟΔΟΣ`, in every script that has case; scripts without case (Han, Kana, Hangul…)
// are left as they are. Dify matches keywords case-sensitively; users take that for a bug.
//
// Keywords are mostly ASCII, which is folded here without allocating when already lower case;
// other text goes through golang.org/x/text/cases (full case folding, not only lower-casing).
func foldKeyword(kw string) string {
	for i := 0; i < len(kw); i++ {
		c := kw[i]
		if c >= 0x80 {
			return cases.Fold().String(kw)
		}
		if 'A' <= c && c <= 'Z' {
			return foldASCII(kw, i)
		}
	}
	return kw
}

// foldASCII lower-cases kw from i on; it falls back to full folding at the first non-ASCII byte.
func foldASCII(kw string, i int) string {
	b := []byte(kw)
	for ; i < len(b); i++ {
		c := b[i]
		if c >= 0x80 {
			return cases.Fold().String(kw)
		}
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
