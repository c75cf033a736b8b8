package mdexport

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestPrepare: the text is trimmed, thoughts removed, a fence around the whole text stripped
// (not a text that merely starts and ends with code), escaped line breaks made real only in a
// text without real ones, and controls dropped.
func TestPrepare(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"  # T\n\ntext  ":                              "# T\n\ntext",
		"<think>\nplan\n</think>\n# T":                 "# T",
		"```markdown\n# T\n\n```sh\nls\n```\n```":      "# T\n\n```sh\nls\n```",
		"```\n# T\n```":                                "# T",
		"```md\n# T\n```":                              "# T",
		"```python\nx = 1\n```\ntext\n```js\ny\n```":   "```python\nx = 1\n```\ntext\n```js\ny\n```",
		"```markdown\n# T\n```sh\nls\n```":             "```markdown\n# T\n```sh\nls\n```",
		`# T\n\n- a\n- b`:                              "# T\n\n- a\n- b",
		"print(\"a\\nb\")\n# T":                        "print(\"a\\nb\")\n# T",
		"a\r\nb\x00c\x1bd\ufffee":                      "a\nbcde",
		"bad \xff utf-8":                               "bad \ufffd utf-8",
		"<think>all of it</think>":                     "",
		"```markdown\n<think>x</think>\n# T\n```":      "# T",
		"<think>x</think>\n\n```markdown\n# T\n```\n ": "# T",
	} {
		if got := prepare(in, true); got != want {
			t.Errorf("prepare(%q) = %q, want %q", in, got, want)
		}
	}
	if got := prepare("```\nx\n```", false); got != "```\nx\n```" {
		t.Errorf("no stripping for code blocks: %q", got)
	}
}

// TestFileNames: the given name is kept as a file name can be, with the right extension; the
// default otherwise; several files numbered.
func TestFileNames(t *testing.T) {
	t.Parallel()
	for given, want := range map[string]string{
		"":                       "output.docx",
		"report":                 "report.docx",
		"report.docx":            "report.docx",
		"Report.DOCX":            "Report.docx",
		"report.pdf":             "report.pdf.docx",
		"../../etc/passwd":       "passwd.docx",
		`C:\tmp\q3 "final"?`:     "q3 _final__.docx",
		"  .docx ":               "output.docx",
		"...":                    "output.docx",
		"a\x00b\nc":              "a_b_c.docx",
		strings.Repeat("é", 100): strings.Repeat("é", 60) + ".docx",
	} {
		if got := fileName(given, defaultStem, ".docx"); got != want {
			t.Errorf("fileName(%q) = %q, want %q", given, got, want)
		}
	}
	if got := fileNames("data.csv", defaultStem, ".csv", 2); !reflect.DeepEqual(got, []string{"data_1.csv", "data_2.csv"}) {
		t.Errorf("fileNames %q", got)
	}
	if got := fileNames("", defaultStem, ".csv", 1); !reflect.DeepEqual(got, []string{"output.csv"}) {
		t.Errorf("fileNames %q", got)
	}
}

// TestSheetNames: headings become valid, unique worksheet names.
func TestSheetNames(t *testing.T) {
	t.Parallel()
	taken := map[string]bool{}
	var got []string
	for i, h := range []string{"Sales [2024]: Q1/Q2", "", "sales [2024] q1 q2", "History", strings.Repeat("x", 40), strings.Repeat("x", 40)} {
		got = append(got, sheetName(h, i, taken))
	}
	want := []string{"Sales 2024 Q1 Q2", "Sheet2", "sales 2024 q1 q2 (2)", "Sheet4", strings.Repeat("x", 30), strings.Repeat("x", 26) + " (2)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sheet names %q, want %q", got, want)
	}
}

// TestColumnNames: column names as pandas makes them.
func TestColumnNames(t *testing.T) {
	t.Parallel()
	got := columnNames([]string{"a", "a", "", "a.1", "a", "b"})
	if want := []string{"a", "a.1", "Unnamed: 2", "a.1.1", "a.2", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("column names %q, want %q", got, want)
	}
}

// TestLimitedBuffer: a writer stops at the output bound.
func TestLimitedBuffer(t *testing.T) {
	t.Parallel()
	b := &limitedBuffer{max: 10}
	if _, err := b.Write([]byte("12345")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WriteString("123456"); !errors.Is(err, errOutputTooLarge) || b.Len() != 5 {
		t.Errorf("past the bound: %v, %d bytes", err, b.Len())
	}
	var f files
	if err := f.add("a", "text/plain", make([]byte, MaxOutputBytes)); err != nil {
		t.Fatal(err)
	}
	if err := f.add("b", "text/plain", []byte("x")); !errors.Is(err, errOutputTooLarge) {
		t.Errorf("files past the bound: %v", err)
	}
}

// TestSafeLink: only addresses a document may carry are kept.
func TestSafeLink(t *testing.T) {
	t.Parallel()
	for dest, want := range map[string]string{
		"https://example.com": "https://example.com", "mailto:a@b.c": "mailto:a@b.c", "/docs/a.md": "/docs/a.md",
		"#section": "#section", "javascript:alert(1)": "", "JavaScript:alert(1)": "", "data:text/html,x": "",
		"vbscript:x": "", "file:///etc/passwd": "",
	} {
		if got := safeLink(dest, false); got != want {
			t.Errorf("safeLink(%q) = %q, want %q", dest, got, want)
		}
	}
	if got := safeLink("mailto:a@b.c", true); got != "" {
		t.Errorf("image from mailto: %q", got)
	}
}
