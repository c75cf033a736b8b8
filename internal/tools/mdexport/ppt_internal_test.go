package mdexport

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzPPTSlides cuts any text into the PPT plugin's slides: no panic, every slide well-formed
// XML, at most maxSlides of them; or one of the errors of a text over the bounds.
func FuzzPPTSlides(f *testing.F) {
	for _, s := range append(fuzzSeeds, "# T\n## S\n\nx\n---\n## A\n\n| a |\n|---|\n| 1 |\n---\n\n---\n", "author: a\ndate: d\n\n### h\n---") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		slides, err := pptSlides(ctx, prepare(md, false), "Title")
		switch {
		case errors.Is(err, errTooComplex), errors.Is(err, errTooManyCells), errors.Is(err, errLinksTooLong):
			return
		case err != nil && strings.Contains(err.Error(), "more than"):
			return
		case err != nil:
			t.Fatalf("%q: %v", md, err)
		}
		if len(slides) == 0 || len(slides) > maxSlides+1 {
			t.Fatalf("%d slides", len(slides))
		}
		for i := range slides {
			sw := &slideWriter{}
			mustXML(t, "slide", sw.slide(&slides[i]))
		}
	})
}
