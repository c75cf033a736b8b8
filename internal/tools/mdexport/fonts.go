package mdexport

import (
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/gobolditalic"
	"golang.org/x/image/font/gofont/goitalic"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
)

// Fonts are the TrueType fonts PDF files are set in: a family in four styles, a monospaced font
// for code, and optionally a fallback for the characters the family lacks (Chinese, Japanese,
// Korean). The PDF embeds the subset of each font its text uses.
type Fonts struct {
	// Name says which fonts these are, for logs and tests.
	Name string
	// Regular, Bold, Italic, BoldItalic and Mono are TrueType (glyf) font files.
	Regular, Bold, Italic, BoldItalic, Mono []byte
	// Fallback is a TrueType font for the characters the others lack; nil for none.
	Fallback []byte

	// The parsed fonts, to ask which characters each has.
	parseOnce         sync.Once
	regular, fallback *sfnt.Font
}

// Where the fonts are looked for: Debian's fonts-dejavu-core (DejaVu Sans and DejaVu Sans Mono;
// fonts-dejavu-extra adds the oblique styles) and fonts-droid-fallback (Droid Sans Fallback,
// which covers Chinese, Japanese and Korean).
const (
	dejaVuDir    = "/usr/share/fonts/truetype/dejavu"
	fallbackFont = "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf"
)

// FindFonts returns DejaVu Sans from dir (dejaVuDir when empty) when its regular, bold and mono
// files are there, its oblique styles if present (the upright ones otherwise), with Droid Sans
// Fallback if it is installed; and the Go fonts, which Parley carries, when DejaVu is not
// there. The Go fonts cover Latin, Greek and Cyrillic text; DejaVu covers much more.
func FindFonts(dir string) *Fonts {
	if dir == "" {
		dir = dejaVuDir
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil
		}
		return b
	}
	f := &Fonts{Name: "DejaVu Sans", Regular: read("DejaVuSans.ttf"), Bold: read("DejaVuSans-Bold.ttf"), Mono: read("DejaVuSansMono.ttf")}
	if f.Regular == nil || f.Bold == nil || f.Mono == nil {
		f = GoFonts()
	} else {
		f.Italic, f.BoldItalic = read("DejaVuSans-Oblique.ttf"), read("DejaVuSans-BoldOblique.ttf")
		if f.Italic == nil || f.BoldItalic == nil {
			f.Italic, f.BoldItalic = f.Regular, f.Bold
		}
	}
	if b, err := os.ReadFile(fallbackFont); err == nil {
		f.Fallback = b
	}
	return f
}

// GoFonts returns the Go fonts (golang.org/x/image/font/gofont), compiled into Parley, without
// a fallback.
func GoFonts() *Fonts {
	return &Fonts{Name: "Go", Regular: goregular.TTF, Bold: gobold.TTF, Italic: goitalic.TTF,
		BoldItalic: gobolditalic.TTF, Mono: gomono.TTF}
}

// defaultFonts are the fonts found on this machine, looked for once.
var defaultFonts = sync.OnceValue(func() *Fonts { return FindFonts("") })

// parse parses the regular and fallback fonts once, to answer has.
func (f *Fonts) parse() {
	f.parseOnce.Do(func() {
		f.regular, _ = sfnt.Parse(f.Regular)
		if f.Fallback != nil {
			f.fallback, _ = sfnt.Parse(f.Fallback)
		}
	})
}

// glyphs answers which font has a character, caching the answers of one document.
type glyphs struct {
	fonts *Fonts
	buf   sfnt.Buffer
	known map[rune]fontChoice
}

// fontChoice is the font a character is set in.
type fontChoice uint8

// Font choices of a character.
const (
	inFamily fontChoice = iota
	inFallback
	inNone
)

// newGlyphs answers for f.
func newGlyphs(f *Fonts) *glyphs {
	f.parse()
	return &glyphs{fonts: f, known: map[rune]fontChoice{}}
}

// choose is the font that has r: the family's (taken to have Latin-1 and Latin Extended-A, which
// the Go and DejaVu fonts all have), else the fallback's, else none.
func (g *glyphs) choose(r rune) fontChoice {
	if r < 0x180 {
		return inFamily
	}
	if c, ok := g.known[r]; ok {
		return c
	}
	c := inNone
	switch {
	case g.has(g.fonts.regular, r):
		c = inFamily
	case g.has(g.fonts.fallback, r):
		c = inFallback
	}
	g.known[r] = c
	return c
}

// has says whether font has a glyph for r.
func (g *glyphs) has(font *sfnt.Font, r rune) bool {
	if font == nil {
		return false
	}
	i, err := font.GlyphIndex(&g.buf, r)
	return err == nil && i != 0
}
