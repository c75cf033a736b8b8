package mdexport_test

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/mdexport"
)

// callPPT invokes the PPT plugin's tool with args.
func callPPT(t *testing.T, args map[string]any) tools.Result {
	t.Helper()
	return callOf(t, "stvlynn/ppt/ppt", "markdown_to_pptx_converter", nil, args)
}

// deckSlides is the title and text of each slide of a presentation, after checking that its
// parts are well-formed and complete.
func deckSlides(t *testing.T, data []byte) (titles, texts []string) {
	t.Helper()
	parts := unzip(t, data)
	xmls := wellFormed(t, parts)
	checkPackage(t, parts, xmls)
	for i := 1; xmls["ppt/slides/slide"+strconv.Itoa(i)+".xml"] != nil; i++ {
		s := xmls["ppt/slides/slide"+strconv.Itoa(i)+".xml"]
		titles = append(titles, slideTitle(s))
		texts = append(texts, s.textOf())
	}
	if n := len(xmls["ppt/presentation.xml"].all("sldId")); n != len(titles) {
		t.Fatalf("%d slides, %d listed", len(titles), n)
	}
	return titles, texts
}

// TestPPTPlugin: the PPT plugin's tool resolves under its plugin id and provider name, cuts a
// text with "---" lines into a slide per part (the first a title slide with its subtitle) and
// a text without them into a title slide and a slide per level-1 or level-2 heading, names the
// file from the title, and answers as the plugin answers.
func TestPPTPlugin(t *testing.T) {
	t.Parallel()
	tl, err := mdexport.Find(context.Background(), tools.Ref{Type: tools.TypeBuiltin, ProviderName: "ppt", Name: "markdown_to_pptx_converter"})
	if err != nil {
		t.Fatal(err)
	}
	if id := tl.Identity(); id.Provider != "ppt" || id.Name != "markdown_to_pptx_converter" {
		t.Errorf("identity %+v", id)
	}
	if _, err := mdexport.Find(context.Background(), tools.Ref{ProviderID: "stvlynn/ppt/ppt", Name: "md_to_pptx"}); err == nil {
		t.Error("md_to_pptx resolves under the PPT plugin")
	}

	res := callPPT(t, map[string]any{"title": "Team Work", "markdown_content": "# Collaboration\n\n## For project managers\n\nA word first.\n\n" +
		"---\n\n## Agenda\n\n- Goals\n- Tools\n\n---\n\nNo heading here.\n\n---\n\n# Numbers\n\n| Tool | Users |\n|---|---|\n| Slack | 10 |\n"})
	if res.IsError || res.Text != "PowerPoint presentation 'Team Work' generated successfully" {
		t.Fatalf("%s", describe(res))
	}
	f := only(t, res.Files)
	if f.Name != "Team_Work.pptx" || f.MIMEType != "application/vnd.openxmlformats-officedocument.presentationml.presentation" {
		t.Errorf("file %s %s", f.Name, f.MIMEType)
	}
	titles, texts := deckSlides(t, f.Data)
	if want := []string{"Collaboration", "Collaboration", "Agenda", "", "Numbers"}; !reflect.DeepEqual(titles, want) {
		t.Fatalf("titles %q", titles)
	}
	for i, want := range []string{"For project managers", "A word first.", "Tools", "No heading here.", "Slack"} {
		if !strings.Contains(texts[i], want) {
			t.Errorf("slide %d lacks %q: %q", i+1, want, texts[i])
		}
	}

	// No separators: the title slide has the call's title (the default one here) and the
	// author and date of the leading lines; text before the first heading is kept.
	res = callPPT(t, map[string]any{"markdown_content": "Author: Ana\nDate: 2026-11-29\n\nIntro.\n\n# One\n\n### Detail\n\nText one.\n\n## Two\n\n- b", "theme": "corporate"})
	if res.IsError || !strings.HasPrefix(res.Text, "PowerPoint presentation 'Presentation' generated successfully") || !strings.Contains(res.Text, `"corporate" is not installed`) {
		t.Fatalf("%s", describe(res))
	}
	f = only(t, res.Files)
	if f.Name != "Presentation.pptx" {
		t.Errorf("file %s", f.Name)
	}
	titles, texts = deckSlides(t, f.Data)
	if want := []string{"Presentation", "Presentation", "One", "Two"}; !reflect.DeepEqual(titles, want) {
		t.Fatalf("titles %q", titles)
	}
	for i, want := range []string{"Ana | 2026-11-29", "Intro.", "Detail", "b"} {
		if !strings.Contains(texts[i], want) {
			t.Errorf("slide %d lacks %q: %q", i+1, want, texts[i])
		}
	}

	// The plugin's answers to nothing to convert and to too much.
	if res := callPPT(t, map[string]any{"markdown_content": " "}); res.Text != "No markdown content provided." || len(res.Files) != 0 {
		t.Errorf("empty: %s", describe(res))
	}
	res = callPPT(t, map[string]any{"markdown_content": strings.Repeat("a", mdexport.MaxInputBytes+1)})
	if !strings.HasPrefix(res.Text, "Error converting markdown to PPTX: ") || len(res.Files) != 0 {
		t.Errorf("too long: %s", describe(res))
	}
	res = callPPT(t, map[string]any{"markdown_content": strings.Repeat("x\n---\n", 1001)})
	if !strings.Contains(res.Text, "more than 1000 slides") || len(res.Files) != 0 {
		t.Errorf("too many slides: %s", describe(res))
	}
	res = callPPT(t, map[string]any{"markdown_content": strings.Repeat("[", mdexport.MaxInputBytes)})
	if !strings.Contains(res.Text, "too complex") || len(res.Files) != 0 {
		t.Errorf("pathological: %s", describe(res))
	}
}
