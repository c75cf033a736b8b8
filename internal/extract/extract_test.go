package extract

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/xuri/excelize/v2"
)

func extractBytes(t *testing.T, name string, data []byte) (Document, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Extract(ctx, name, bytes.NewReader(data), int64(len(data)))
}

func mustExtract(t *testing.T, name string, data []byte) Document {
	t.Helper()
	doc, err := extractBytes(t, name, data)
	if err != nil {
		t.Fatalf("Extract(%s): %v", name, err)
	}
	if !utf8.ValidString(doc.Text) || strings.ContainsRune(doc.Text, 0) {
		t.Fatalf("Extract(%s): text is not clean UTF-8: %q", name, doc.Text)
	}
	return doc
}

func assertKind(t *testing.T, err error, kind string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *Error of kind %q", err, err, kind)
	}
	if e.Kind != kind {
		t.Fatalf("error kind = %q (%s), want %q", e.Kind, e.Message, kind)
	}
	if e.Message == "" {
		t.Fatal("error has an empty message")
	}
	return e
}

func utf16Bytes(s string, bigEndian bool) []byte {
	u := utf16.Encode([]rune(s))
	out := make([]byte, 0, 2*len(u)+2)
	if bigEndian {
		out = append(out, 0xFE, 0xFF)
	} else {
		out = append(out, 0xFF, 0xFE)
	}
	for _, c := range u {
		if bigEndian {
			out = append(out, byte(c>>8), byte(c))
		} else {
			out = append(out, byte(c), byte(c>>8))
		}
	}
	return out
}

func TestExtractText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		data       []byte
		want       string
	}{
		{"utf8", "a.txt", []byte("hello\r\nworld\n"), "hello\nworld\n"},
		{"utf8 bom", "a.TXT", []byte("\xEF\xBB\xBFbom text"), "bom text"},
		{"utf16le bom", "a.txt", utf16Bytes("héllo 世界\nline2", false), "héllo 世界\nline2"},
		{"utf16be bom", "a.txt", utf16Bytes("big endian ✓", true), "big endian ✓"},
		{"utf16le no bom", "a.txt", utf16Bytes("plain ascii text", false)[2:], "plain ascii text"},
		{"invalid bytes and nul", "a.txt", []byte("ok\xff\xfe bad\x00nul"), "ok\uFFFD bad" + "nul"},
		{"vtt", "sub.vtt", []byte("WEBVTT\n\n00:00.000 --> 00:01.000\nhi"), "WEBVTT\n\n00:00.000 --> 00:01.000\nhi"},
		{"properties", "app.properties", []byte("a=1\nb=2"), "a=1\nb=2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := mustExtract(t, tt.file, tt.data)
			if doc.Text != tt.want {
				t.Fatalf("text = %q, want %q", doc.Text, tt.want)
			}
			if len(doc.Parts) != 1 || doc.Parts[0] != tt.want {
				t.Fatalf("parts = %q, want the whole text", doc.Parts)
			}
		})
	}
}

func TestExtractUTF16Fixture(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "utf16le.txt"))
	if err != nil {
		t.Fatal(err)
	}
	doc := mustExtract(t, "utf16le.txt", data)
	if want := "Parley UTF-16 fixture\nÜmlaut ünd 中文\n"; doc.Text != want {
		t.Fatalf("text = %q, want %q", doc.Text, want)
	}
}

func TestExtractMarkdown(t *testing.T) {
	t.Parallel()
	src := "Intro line <b>bold</b>\n\n# Title\nBody <span>one</span>\n\n```\n# not a header <kept>\n```\n## Sub #2\nSecond body\n#hashtag is text\n"
	doc := mustExtract(t, "notes.MD", []byte(src))
	want := []string{
		"Intro line bold",
		"Title\nBody one\n\n```\n# not a header <kept>\n```",
		"Sub 2\nSecond body\n#hashtag is text",
	}
	if !reflect.DeepEqual(doc.Parts, want) {
		t.Fatalf("parts = %q, want %q", doc.Parts, want)
	}
	if doc.Text != strings.Join(want, "\n\n") {
		t.Fatalf("text = %q", doc.Text)
	}
	for _, ext := range []string{"markdown", "mdx"} {
		d := mustExtract(t, "x."+ext, []byte("# H\nb"))
		if d.Text != "H\nb" {
			t.Fatalf("%s: text = %q", ext, d.Text)
		}
	}
}

func TestExtractHTML(t *testing.T) {
	t.Parallel()
	src := `<!doctype html><html><head><title>T</title><style>p{color:red}</style><script>var secret = 1;</script></head>
<body><h1>Heading</h1><p>First <a href="https://example.com">link</a> para.</p>
<table><tr><th>Name</th><th>Age</th></tr><tr><td>Ann</td><td>30</td></tr></table><p>Last</p></body></html>`
	doc := mustExtract(t, "page.htm", []byte(src))
	for _, bad := range []string{"secret", "color:red"} {
		if strings.Contains(doc.Text, bad) {
			t.Fatalf("text contains invisible %q: %q", bad, doc.Text)
		}
	}
	assertInOrder(t, doc.Text, "# Heading", "First [link](https://example.com) para.", "| Name | Age |", "| Ann  | 30  |", "Last")
}

func assertInOrder(t *testing.T, text string, subs ...string) {
	t.Helper()
	pos := 0
	for _, s := range subs {
		i := strings.Index(text[pos:], s)
		if i < 0 {
			t.Fatalf("%q not found (in order) in:\n%s", s, text)
		}
		pos += i + len(s)
	}
}

func TestExtractCSV(t *testing.T) {
	t.Parallel()
	src := " name ,city,note\nAnn,Paris,\"hello, world\"\nBob,Rome,x,EXTRA\n\nCid,Oslo\n,,\nDee,\"multi\nline\",z\n"
	doc := mustExtract(t, "people.csv", []byte(src))
	want := []string{
		"name: Ann;city: Paris;note: hello, world",
		"name: Cid;city: Oslo;note: ",
		"name: Dee;city: multi\nline;note: z",
	}
	if !reflect.DeepEqual(doc.Parts, want) {
		t.Fatalf("parts = %q, want %q", doc.Parts, want)
	}
	if doc.Text != strings.Join(want, "\n") {
		t.Fatalf("text = %q", doc.Text)
	}
}

func TestExtractXLSX(t *testing.T) {
	t.Parallel()
	f := excelize.NewFile()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.SetSheetRow("Sheet1", "A1", &[]any{"Name", "Score", "Note"}))
	must(f.SetSheetRow("Sheet1", "A2", &[]any{"Ann", 90, ""}))
	must(f.SetSheetRow("Sheet1", "A4", &[]any{"Bob", 75.5, "late"}))
	_, err := f.NewSheet("Second")
	must(err)
	must(f.SetSheetRow("Second", "A1", &[]any{"K", "V"}))
	must(f.SetSheetRow("Second", "A2", &[]any{"", "only v"}))
	var buf bytes.Buffer
	must(f.Write(&buf))
	must(f.Close())

	doc := mustExtract(t, "book.XLSX", buf.Bytes())
	want := []string{
		`"Name":"Ann";"Score":"90"`,
		`"Name":"Bob";"Score":"75.5";"Note":"late"`,
		`"V":"only v"`,
	}
	if !reflect.DeepEqual(doc.Parts, want) {
		t.Fatalf("parts = %q, want %q", doc.Parts, want)
	}
	if doc.Text != strings.Join(want, "\n") {
		t.Fatalf("text = %q", doc.Text)
	}
}

func TestExtractDOCX(t *testing.T) {
	t.Parallel()
	body := para("First paragraph.") +
		`<w:p><w:r><w:t>See </w:t></w:r><w:hyperlink r:id="rId5"><w:r><w:t>the docs</w:t></w:r></w:hyperlink><w:r><w:tab/><w:t>now</w:t></w:r></w:p>` +
		`<w:p></w:p>` +
		`<w:tbl><w:tblPr/><w:tr>` + cell("H1") + cell("H|2") + `</w:tr><w:tr>` + cell("a") + cell("b") + `</w:tr>` +
		`<w:tr><w:tc><w:tcPr><w:gridSpan w:val="2"/></w:tcPr>` + para("merged") + `</w:tc></w:tr></w:tbl>` +
		`<w:p><w:r><w:t>Deleted:</w:t></w:r><w:del><w:r><w:delText>gone</w:delText></w:r></w:del></w:p>` +
		`<w:p><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><wps:txbx><w:txbxContent>` + para("In a box") +
		`</w:txbxContent></wps:txbx></w:drawing></mc:Choice><mc:Fallback><w:pict>` + para("In a box") + `</w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>` +
		para("Last &amp; final.")
	doc := mustExtract(t, "report.docx", buildDOCX(t, body))
	want := "First paragraph.\n" +
		"See [the docs](https://example.com/dify)\tnow\n" +
		"| H1 | H\\|2 |\n| --- | --- |\n| a | b |\n| merged | merged |\n" +
		"Deleted:\n" +
		"In a box\n" +
		"Last & final."
	if doc.Text != want {
		t.Fatalf("text =\n%q\nwant\n%q", doc.Text, want)
	}
}

func TestExtractPDF(t *testing.T) {
	t.Parallel()
	data := buildPDF(t, []string{"Page one text\nsecond line", "", "Page three"}, "")
	doc := mustExtract(t, "doc.pdf", data)
	if len(doc.Pages) != 3 {
		t.Fatalf("pages = %+v, want 3", doc.Pages)
	}
	for i, p := range doc.Pages {
		if p.Number != i+1 {
			t.Fatalf("page %d numbered %d", i, p.Number)
		}
	}
	assertInOrder(t, doc.Pages[0].Text, "Page one text", "second line")
	if doc.Pages[1].Text != "" || doc.Pages[2].Text != "Page three" {
		t.Fatalf("pages = %+v", doc.Pages)
	}
	if len(doc.Parts) != 2 {
		t.Fatalf("parts = %q, want 2 non-empty pages", doc.Parts)
	}
	assertInOrder(t, doc.Text, "Page one text", "second line", "\n\nPage three")
}

func TestExtractErrors(t *testing.T) {
	t.Parallel()
	pdf := buildPDF(t, []string{"hello"}, "")
	goodDOCX := buildDOCX(t, para("hello"))

	var lying bytes.Buffer
	zw := zip.NewWriter(&lying)
	rawDeflateEntry(t, zw, "word/document.xml", 1024, 8<<20)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	var declared bytes.Buffer
	zw = zip.NewWriter(&declared)
	rawDeflateEntry(t, zw, "word/document.xml", 200<<20, 1<<20)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}

	corruptXLSX := buildZip(t, []zipFile{{"[Content_Types].xml", "<Types/>"}, {"xl/workbook.xml", "<workbook><sheets><sheet"}})

	tests := []struct {
		name, file string
		data       []byte
		kind       string
	}{
		{"corrupt json", "data.json", []byte(`{"a":1`), KindCorrupt},
		{"unsupported exe", "x.exe", []byte("MZ"), KindUnsupported},
		{"no extension", "README", []byte("x"), KindUnsupported},
		{"legacy xls", "old.xls", cfbWith("Workbook"), KindUnsupported},
		{"corrupt pdf", "bad.pdf", []byte("%PDF-1.4\nthis is not really a pdf\n%%EOF\n"), KindCorrupt},
		{"garbage pdf", "bad.pdf", []byte("hello world"), KindCorrupt},
		{"truncated pdf", "cut.pdf", pdf[:len(pdf)/2], KindCorrupt},
		{"encrypted pdf", "secret.pdf", buildPDF(t, []string{"hidden"}, encryptTrailer), KindEncrypted},
		{"truncated docx", "cut.docx", goodDOCX[:len(goodDOCX)*2/3], KindCorrupt},
		{"docx without document", "empty.docx", buildZip(t, []zipFile{{"[Content_Types].xml", docxContentTypes}}), KindCorrupt},
		{"docx bad xml", "bad.docx", buildZip(t, []zipFile{{"word/document.xml", "<w:document><w:body><w:p>"}}), KindCorrupt},
		{"docx bomb lying sizes", "bomb.docx", lying.Bytes(), KindCorrupt},
		{"docx bomb declared sizes", "bomb.docx", declared.Bytes(), KindTooLarge},
		{"encrypted docx", "secret.docx", cfbWith("EncryptedPackage"), KindEncrypted},
		{"legacy doc renamed", "old.docx", cfbWith("WordDocument"), KindUnsupported},
		{"encrypted xlsx", "secret.xlsx", cfbWith("EncryptedPackage"), KindEncrypted},
		{"corrupt xlsx", "bad.xlsx", corruptXLSX, KindCorrupt},
		{"not a zip xlsx", "bad.xlsx", []byte("just text"), KindCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := extractBytes(t, tt.file, tt.data)
			e := assertKind(t, err, tt.kind)
			t.Logf("%s: %s (cause: %v)", tt.file, e.Message, e.Unwrap())
			if got := errors.Is(err, ErrUnsupportedType); got != (tt.kind == KindUnsupported) {
				t.Fatalf("errors.Is(ErrUnsupportedType) = %v for kind %q", got, e.Kind)
			}
		})
	}
}

func TestExtractCommittedFixtures(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"corrupt.pdf": KindCorrupt,
	}
	for file, kind := range tests {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		_, err = extractBytes(t, file, data)
		assertKind(t, err, kind)
	}
}

func TestExtractLimitsAndContext(t *testing.T) {
	t.Parallel()
	_, err := Extract(context.Background(), "big.txt", strings.NewReader("x"), MaxInputSize+1)
	assertKind(t, err, KindTooLarge)

	// The declared size is only a hint: the read itself is capped.
	_, err = Extract(context.Background(), "big.txt", zeroReader{}, 0)
	assertKind(t, err, KindTooLarge)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Extract(ctx, "a.txt", strings.NewReader("x"), 1)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestSafeRunRecoversPanic(t *testing.T) {
	t.Parallel()
	_, err := safeRun(context.Background(), func(context.Context, []byte) (Document, error) {
		var m map[string]int
		m["boom"]++
		return Document{}, nil
	}, nil)
	e := assertKind(t, err, KindCorrupt)
	if strings.Contains(e.Message, "boom") || strings.Contains(e.Message, "goroutine") {
		t.Fatalf("message leaks internals: %q", e.Message)
	}
	if e.Unwrap() == nil {
		t.Fatal("panic cause not kept")
	}
}

func TestSafeRunHonoursContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	defer close(release)
	done := make(chan error, 1)
	go func() {
		_, err := safeRun(ctx, func(context.Context, []byte) (Document, error) {
			<-release // a parser stuck in a loop
			return Document{}, nil
		}, nil)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("safeRun did not return after cancellation")
	}
}

func TestFinishTruncates(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("é", MaxTextSize/2+10)
	doc := finish(Document{Text: big, Parts: []string{big}})
	if !doc.Truncated || len(doc.Text) > MaxTextSize || !utf8.ValidString(doc.Text) {
		t.Fatalf("truncated=%v len=%d valid=%v", doc.Truncated, len(doc.Text), utf8.ValidString(doc.Text))
	}
	if len(doc.Parts) != 1 || len(doc.Parts[0]) > MaxTextSize {
		t.Fatalf("parts not truncated: %d", len(doc.Parts))
	}
}

func TestExtractJSON(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "sample.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := extractBytes(t, "sample.json", data)
	if err != nil || !strings.Contains(doc.Text, "\n") || len(doc.Parts) != 1 {
		t.Fatalf("json: %q %v", doc.Text, err)
	}
}

func TestSupported(t *testing.T) {
	t.Parallel()
	for _, ext := range []string{"csv", "docx", "htm", "html", "json", "markdown", "md", "mdx", "pdf", "properties", "txt", "vtt", "xlsx"} {
		if !Supported("file." + ext) {
			t.Errorf("Supported(file.%s) = false", ext)
		}
	}
	if len(extractors) != 13 {
		t.Errorf("%d extensions supported, want the 13 above", len(extractors))
	}
	for name, want := range map[string]bool{"A.PDF": true, "b.Docx": true, "c.xls": false, "d.json": true, "f.yaml": false, "e": false} {
		if got := Supported(name); got != want {
			t.Fatalf("Supported(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestExtractMutatedFilesNeverPanic flips and cuts bytes of valid fixtures:
// every outcome must be a document or an *Error, never a panic or a hang.
func TestExtractMutatedFilesNeverPanic(t *testing.T) {
	t.Parallel()
	f := excelize.NewFile()
	if err := f.SetSheetRow("Sheet1", "A1", &[]any{"h1", "h2"}); err != nil {
		t.Fatal(err)
	}
	if err := f.SetSheetRow("Sheet1", "A2", &[]any{"v1", "v2"}); err != nil {
		t.Fatal(err)
	}
	var xlsx bytes.Buffer
	if err := f.Write(&xlsx); err != nil {
		t.Fatal(err)
	}
	seeds := map[string][]byte{
		"m.pdf":  buildPDF(t, []string{"alpha beta", "gamma"}, ""),
		"m.docx": buildDOCX(t, para("alpha")+`<w:tbl><w:tr>`+cell("x")+`</w:tr></w:tbl>`),
		"m.xlsx": xlsx.Bytes(),
		"m.csv":  []byte("a,b\n1,\"2\n3,4"),
		"m.html": []byte("<p>x<table><tr><td>y"),
		"m.md":   []byte("# a\n```\nb"),
	}
	rng := uint32(2026)
	next := func(n int) int {
		rng ^= rng << 13
		rng ^= rng >> 17
		rng ^= rng << 5
		return int(rng % uint32(n))
	}
	for name, seed := range seeds {
		for i := 0; i < 150; i++ {
			data := append([]byte(nil), seed...)
			switch i % 3 {
			case 0:
				data = data[:next(len(data))]
			default:
				for k := 0; k < 1+next(8); k++ {
					data[next(len(data))] = byte(next(256))
				}
			}
			doc, err := extractBytes(t, name, data)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("%s mutation %d: non-typed error %v", name, i, err)
				}
				if c := e.Unwrap(); c != nil && strings.HasPrefix(c.Error(), "panic:") {
					t.Logf("%s mutation %d: recovered %s", name, i, strings.SplitN(c.Error(), "\n", 2)[0])
				}
				continue
			}
			if !utf8.ValidString(doc.Text) || strings.ContainsRune(doc.Text, 0) {
				t.Fatalf("%s mutation %d: unclean text", name, i)
			}
		}
	}
}
