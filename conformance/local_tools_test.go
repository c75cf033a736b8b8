package conformance

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
)

// localToolsNotes is the notes the Office Desk app turns into files: a title slide's heading,
// slides parted by "---", and a table.
const localToolsNotes = "# Quarter\n\n## Numbers first\n\n---\n\n## Sales\n\n| Region | Units |\n|---|---|\n| North | 12 |\n| South | 30 |\n"

// TestLocalToolsGolden: the tools Parley has built in under the names of Dify's plugins that
// need no outside service (Markdown Exporter, PDF Process, Excel to JSON, PPT, Base64 codec,
// ECharts, audio)
// resolve when an export names them (a strict import refuses a missing tool), run one after
// another in a workflow, each reading what the one before made, and make real files: the DOCX
// and PPTX files download and open. The stream is pinned.
func TestLocalToolsGolden(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	p := startParley(t, "sqlite")
	p.CLI(t, "apps", "import", "--publish", "--strict", "testdata/workflow-local-tools.yml")
	key := p.CLI(t, "keys", "create", "--app", "Office Desk")
	c := newClient(t, p, key)
	inputs := map[string]any{"notes": localToolsNotes, "title": "Quarter review"}
	r, err := c.RunWorkflowWithResponse(context.Background(), nil, client.RunWorkflowJSONRequestBody{Inputs: inputs, User: "office"})
	if err != nil || r.JSON200 == nil {
		t.Fatalf("run: %v %s", err, r.Body)
	}
	d := r.JSON200.Data
	if d.Status != "succeeded" || d.Outputs == nil {
		t.Fatalf("run %+v %s", d, r.Body)
	}
	out := *d.Outputs
	// excel2json reads every cell as text, as the plugin does (pandas' dtype=str).
	table := `[{"Region":"North","Units":"12"},{"Region":"South","Units":"30"}]`
	if compact(t, out["table"]) != table {
		t.Errorf("table %v", out["table"])
	}
	if enc, _ := out["encoded"].(string); enc == "" || !bytes.Equal(mustBase64(t, enc), []byte(out["table"].(string))) {
		t.Errorf("encoded %q", out["encoded"])
	}
	if out["slides_said"] != "PowerPoint presentation 'Quarter review' generated successfully" || !strings.HasSuffix(fmt.Sprint(out["heard"]), "alloy:Quarter review") ||
		!strings.Contains(out["chart"].(string), `"North"`) {
		t.Errorf("outputs %v", out)
	}
	if out["page_count"] != "1" || jsonText(t, out["page_list"]) != `[{"page1":1}]` {
		t.Errorf("pages %v %v", out["page_count"], out["page_list"])
	}
	if images, _ := out["images"].([]any); len(images) != 1 || images[0].(map[string]any)["filename"] != "notes_page1.png" ||
		images[0].(map[string]any)["mime_type"] != "image/png" {
		t.Errorf("images %v", out["images"])
	}
	slides := zipFile(t, p, out["slides"], "Quarter_review.pptx")
	if s := slides["ppt/slides/slide1.xml"]; !strings.Contains(s, "Quarter") || !strings.Contains(s, "Numbers first") ||
		!strings.Contains(slides["ppt/slides/slide2.xml"], "South") {
		t.Errorf("slides:\n%s\n%s", s, slides["ppt/slides/slide2.xml"])
	}
	if doc := zipFile(t, p, out["docx"], "Quarter review.docx"); !strings.Contains(doc["word/document.xml"], "Numbers first") {
		t.Errorf("document:\n%s", doc["word/document.xml"])
	}

	body, err := json.Marshal(map[string]any{"inputs": inputs, "user": "golden", "response_mode": "streaming"})
	if err != nil {
		t.Fatal(err)
	}
	got := streamGoldenAt(t, p, "/workflows/run", key, string(body))
	got = toolFileLinkRE.ReplaceAllString(got, `$1?<signed>`)
	got = timestampRE.ReplaceAllString(got, `"sys.timestamp":<ts>`)
	golden(t, "workflow_local_tools_streaming.sse.golden", got)
}

// toolFileLinkRE matches a tool file's signed link, whose query changes with every run.
var toolFileLinkRE = regexp.MustCompile(`(/files/tools/<uuid-\d+>\.\w+)\?[^")\s]+`)

// compact is a JSON text without the spaces between its tokens.
func compact(t *testing.T, v any) string {
	t.Helper()
	s, _ := v.(string)
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return b.String()
}

// jsonText is v as compact JSON.
func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mustBase64 decodes standard Base64.
func mustBase64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return b
}

// zipFile downloads the one file of a workflow's files output, checks its name, and reads it as
// a ZIP package: its parts' text by name.
func zipFile(t *testing.T, p *Parley, files any, name string) map[string]string {
	t.Helper()
	list, _ := files.([]any)
	if len(list) != 1 {
		t.Fatalf("files %v", files)
	}
	f, _ := list[0].(map[string]any)
	link, _ := f["url"].(string)
	if f["filename"] != name {
		t.Errorf("file %v, want %s", f, name)
	}
	base, err := url.Parse(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := newContractClient(t).Get(base.ResolveReference(ref).String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", link, resp.StatusCode, err)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	parts := map[string]string{}
	for _, zf := range zr.File {
		rc, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		parts[zf.Name] = string(b)
	}
	return parts
}
