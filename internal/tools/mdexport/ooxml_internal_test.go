package mdexport

import (
	"context"
	"testing"
)

// The DOCX body and the slides of every text FuzzMarkdown tries are well-formed XML.
func init() {
	fuzzChecks = append(fuzzChecks, func(t *testing.T, ctx context.Context, doc *document) {
		w := &docxWriter{links: map[string]string{}}
		if err := w.blocks(ctx, doc.blocks, 0); err != nil {
			t.Fatal(err)
		}
		mustXML(t, "docx", `<w:body xmlns:w="`+nsW+`" xmlns:r="`+nsR+`">`+w.body.String()+`</w:body>`)
		mustXML(t, "numbering", w.numbering())
		slides, err := newDeck(doc).slides()
		if err != nil {
			return // more slides than a presentation may have
		}
		for i := range slides {
			sw := &slideWriter{}
			mustXML(t, "slide", sw.slide(&slides[i]))
		}
	})
}
