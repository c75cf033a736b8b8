package conformance

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
)

// pdfPolicyChunks are the chunks expected of each fixture: its two pages.
var pdfPolicyChunks = func() map[string][]string {
	page1 := "Parking policy\n\n" +
		"Each employee gets one parking permit. Permits\n" +
		"are issued by the facilities office and must be\n" +
		"displayed behind the windscreen at all times.\n\n" +
		"Visitors park in the marked bays near the main\n" +
		"entrance. A visitor permit is valid for one day\n" +
		"and can be requested at the reception desk; an\n" +
		"unused permit expires automatically at midnight."
	left := "Bicycle racks stand in\nthe inner courtyard.\nShowers are on the\nground floor."
	right := "Charging points are\non level two of the\ngarage. Book a slot\nin the staff portal."
	return map[string][]string{
		// Ghostscript sets both column headings with one TJ before the columns.
		"ps2pdf-policy.pdf": {page1, "Cycling Electric cars\n" + left + "\n\n" + right},
		"cairo-policy.pdf":  {page1, "Cycling\n" + left + "\n\nElectric cars\n" + right},
	}
}()

// TestKnowledgePDFLineBreaks (issue 20): the lines of a PDF were joined with nothing between
// them ("Parking policyEach employee gets one parking permit."), so a keyword search for
// "policy" missed the document. The PDFs of two real producers (made by
// internal/extract/testdata/pdf/make.sh) are uploaded to economy knowledge bases: their chunks
// keep the line and paragraph breaks, a hyphenated word comes out whole, and a keyword search
// finds each document by the last word of its heading.
func TestKnowledgePDFLineBreaks(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.KnowledgeKey)
		for _, file := range []string{"ps2pdf-policy.pdf", "cairo-policy.pdf"} {
			t.Run(file, func(t *testing.T) {
				data, err := os.ReadFile(filepath.Join("..", "internal", "extract", "testdata", "pdf", file))
				if err != nil {
					t.Fatal(err)
				}
				ds := kdDataset(t, c, "pdf-lines-"+strings.TrimSuffix(file, ".pdf"), "economy")
				created := kdCreateFile(t, c, ds, file, data, automaticRule)
				kdCompleted(t, c, ds, created.Batch)
				docID := created.Document.Id.String()

				// One chunk per page (each is far below the chunk size), with the page's lines,
				// paragraphs and columns as the extractor lays them out.
				segs := listSegments(t, c, ds, docID, nil).Data
				slices.SortFunc(segs, func(a, b client.Segment) int { return a.Position - b.Position })
				var got []string
				for _, s := range segs {
					got = append(got, s.Content)
				}
				if want := pdfPolicyChunks[file]; !slices.Equal(got, want) {
					t.Errorf("chunks =\n%q\nwant\n%q", got, want)
				}
				for _, glued := range []string{"policyEach", "Permitsare", "automat-"} {
					if strings.Contains(strings.Join(got, "\n"), glued) {
						t.Errorf("chunks contain %q", glued)
					}
				}

				for name, rm := range map[string]*client.RetrievalModel{
					"default": nil,
					"keyword": {SearchMethod: client.KeywordSearch, TopK: 3},
				} {
					res := retrieve(t, c, ds, "policy", rm)
					found := false
					for _, r := range res.Records {
						found = found || r.Segment.DocumentId.String() == docID
					}
					if !found {
						t.Errorf("%s search for %q: %d records, none of the document", name, "policy", len(res.Records))
					}
				}
			})
		}
	})
}
