package extracttest

// PolicyPages are the pages of text expected of each producer's PDF fixture in
// internal/extract/testdata/pdf (made by make.sh there), by file name. Page 1 is a heading and
// two paragraphs, with "automat-" / "ically" hyphenated across a line break; page 2 has two
// columns, each written as one run of lines. Ghostscript sets both column headings with one TJ
// (a wide gap between them) before the columns; Cairo sets each heading with its column.
var PolicyPages = map[string][2]string{
	"ps2pdf-policy.pdf": {policyPage1, "Cycling Electric cars\n" + policyLeft + "\n\n" + policyRight},
	"cairo-policy.pdf":  {policyPage1, "Cycling\n" + policyLeft + "\n\nElectric cars\n" + policyRight},
	// The same files rewritten by pdfunite, whose trailer's /Size leaves out the catalog.
	"pdfunite-ps2pdf-policy.pdf": {policyPage1, "Cycling Electric cars\n" + policyLeft + "\n\n" + policyRight},
	"pdfunite-cairo-policy.pdf":  {policyPage1, "Cycling\n" + policyLeft + "\n\nElectric cars\n" + policyRight},
}

const (
	policyPage1 = "Parking policy\n\n" +
		"Each employee gets one parking permit. Permits\n" +
		"are issued by the facilities office and must be\n" +
		"displayed behind the windscreen at all times.\n\n" +
		"Visitors park in the marked bays near the main\n" +
		"entrance. A visitor permit is valid for one day\n" +
		"and can be requested at the reception desk; an\n" +
		"unused permit expires automatically at midnight."
	policyLeft  = "Bicycle racks stand in\nthe inner courtyard.\nShowers are on the\nground floor."
	policyRight = "Charging points are\non level two of the\ngarage. Book a slot\nin the staff portal."
)
