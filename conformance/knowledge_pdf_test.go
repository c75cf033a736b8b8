package conformance

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/extract/extracttest"
)

// TestKnowledgePDFLineBreaks (issue 20): the lines of a PDF were joined with nothing between
// them ("Parking policyEach employee gets one parking permit."), so a keyword search for
// "policy" missed the document. The PDFs of two real producers (made by
// internal/extract/testdata/pdf/make.sh), and one rewritten by pdfunite (whose trailer's /Size
// left out the catalog, so the file read as one without pages), are uploaded to economy
// knowledge bases: their chunks
// keep the line and paragraph breaks, a hyphenated word comes out whole, and a keyword search
// finds each document by the last word of its heading.
func TestKnowledgePDFLineBreaks(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.KnowledgeKey)
		for _, file := range []string{"ps2pdf-policy.pdf", "cairo-policy.pdf", "pdfunite-cairo-policy.pdf"} {
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
				if want := extracttest.PolicyPages[file]; !slices.Equal(got, want[:]) {
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
