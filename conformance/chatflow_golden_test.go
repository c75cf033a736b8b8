package conformance

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

var (
	loopbackRE = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	dateRE     = regexp.MustCompile(`"date":"[^"]*"`)
)

// exampleApp writes the example Chatflow at path (relative to the conformance directory) under
// another app name, with the replacements edit makes, imports and publishes it, and returns a
// key of the app.
func exampleApp(t *testing.T, p *Parley, path, from, name string, edit ...string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(raw), "name: "+from, "name: "+name, 1)
	for i := 0; i+1 < len(edit); i += 2 {
		doc = strings.Replace(doc, edit[i], edit[i+1], 1)
	}
	file := filepath.Join(t.TempDir(), "flow.yml")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	p.CLI(t, "apps", "import", "--publish", file)
	return p.CLI(t, "keys", "create", "--app", name)
}

// streamGolden sends body to the app of key in streaming mode and returns the transcript with
// what differs between runs normalised: ids, times, loopback ports and the Date header an API
// answered with. Every data line must be one JSON object.
func streamGolden(t *testing.T, p *Parley, key, body string) string {
	t.Helper()
	return streamGoldenAt(t, p, "/chat-messages", key, body)
}

// streamGoldenAt is streamGolden for the operation at path (POST).
func streamGoldenAt(t *testing.T, p *Parley, path, key, body string) string {
	t.Helper()
	req, _ := newRequest("POST", p.URL+path, body, key)
	resp, err := newContractClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return transcript(t, resp)
}

// transcript reads a response as streamGolden pins it.
func transcript(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := httpTranscript(resp, raw)
	got = normalize(strings.TrimRight(got, "\n") + "\n")
	got = toolTimeRE.ReplaceAllString(got, `"$1":<seconds>`)
	got = finishedRE.ReplaceAllString(got, `"finished_at":<ts>`)
	got = startedRE.ReplaceAllString(got, `"started_at":<ts>`)
	got = loopbackRE.ReplaceAllString(got, `127.0.0.1:<port>`)
	got = dateRE.ReplaceAllString(got, `"date":"<date>"`)
	for _, line := range strings.Split(got, "\n") {
		if rest, ok := strings.CutPrefix(line, "data: "); ok && !json.Valid([]byte(strings.NewReplacer("<seconds>", "0", "<ts>", "0").Replace(rest))) {
			t.Fatalf("not JSON: %s", line)
		}
	}
	return got
}

// TestChatflowBranchesGolden pins the streams of the branches example: the summary branch
// (if-else case, Jinja2 template-transform, variable-aggregator) and the draft branch whose LLM
// fails, is retried (node_retry) and takes its fail branch to a template (partial-succeeded).
func TestChatflowBranchesGolden(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	p := startParley(t, "sqlite")
	key := exampleApp(t, p, filepath.Join("..", "docs", "examples", "chatflow-branches.yml"), "Branches", "Golden Branches")
	upstream.On("golden draft", openaitest.Reply{Status: 500, ErrorMessage: "down"})
	for _, tc := range []struct{ mode, query, file string }{
		{"summary", "ab", "chatflow_branches_summary.sse.golden"},
		{"draft", "golden draft", "chatflow_branches_draft.sse.golden"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			body := `{"query":"` + tc.query + `","inputs":{"mode":"` + tc.mode + `"},"user":"golden","response_mode":"streaming","auto_generate_name":false}`
			golden(t, tc.file, streamGolden(t, p, key, body))
		})
	}
}

// TestChatflowKnowledgeGolden pins the stream of the knowledge example: the knowledge-retrieval
// node's chunks, the LLM answering with them as context, and message_end's citations.
func TestChatflowKnowledgeGolden(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	p := startParley(t, "sqlite")
	kc := newClient(t, p, p.KnowledgeKey)
	ds := datasetByName(t, kc, "handbook")
	indexText(t, kc, ds, client.CreateDocumentByTextJSONRequestBody{Name: "handbook for flows", Text: handbookText,
		IndexingTechnique: ptr(client.HighQuality), ProcessRule: paragraphRule()})
	key := exampleApp(t, p, filepath.Join("..", "docs", "examples", "chatflow-knowledge.yml"), "Handbook Desk", "Golden Handbook")
	q := "golden: how many days of paid vacation does every employee receive"
	upstream.On(q, openaitest.Reply{Chunks: []string{"Twenty", " days."}, Usage: &providers.Usage{PromptTokens: 40, CompletionTokens: 2}})
	body := `{"query":"` + q + `","inputs":{},"user":"golden","response_mode":"streaming","auto_generate_name":false}`
	golden(t, "chatflow_knowledge_streaming.sse.golden", streamGolden(t, p, key, body))
}

// TestChatflowCodeHTTPGolden pins the stream of the code-and-HTTP example: document-extractor
// over the message's (absent) files, a Python code node, an http-request node to a loopback API
// and a JavaScript code node reading its JSON answer.
func TestChatflowCodeHTTPGolden(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	api := forecastAPI(t)
	p := startParley(t, "sqlite")
	p.Restart(t, allowLoopback)
	key := exampleApp(t, p, filepath.Join("testdata", "chatflow-code-http.yml"), "Code and HTTP", "Golden Code",
		"'http://127.0.0.1:1'", "'"+api.URL+"'")
	body := `{"query":"Will it rain tomorrow?","inputs":{"city":"  paris "},"user":"golden","response_mode":"streaming","auto_generate_name":false}`
	got := streamGolden(t, p, key, body)
	if strings.Contains(got, "code sandbox unavailable") && os.Getenv("CI") == "" {
		t.Skip("SKIPPING: the code sandbox cannot run on this machine")
	}
	golden(t, "chatflow_code_http_streaming.sse.golden", got)
}

// TestChatflowTripGolden pins the streams of the trip example: the question-classifier's two
// branches, and on the trip branch the parameter-extractor (a JSON answer converted to the
// declared types) and the list-operator (filter, order, limit).
func TestChatflowTripGolden(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	p := startParley(t, "sqlite")
	key := exampleApp(t, p, filepath.Join("..", "docs", "examples", "chatflow-trip.yml"), "Trip Desk", "Golden Trip")
	usage := &providers.Usage{PromptTokens: 50, CompletionTokens: 10}
	trip := "golden: three days in Lisbon, seeing belem, alfama and the tram"
	// The classifier's and the extractor's requests both end with the query: their
	// instructions (in the system prompt) tell them apart, so each run gets the same answers.
	upstream.OnRequest(func(r *openaitest.Request) (openaitest.Reply, bool) {
		if !strings.Contains(r.LastUserMessage(), trip) {
			return openaitest.Reply{}, false
		}
		for _, m := range r.Messages {
			if strings.Contains(m.Text(), "Days are whole days.") {
				return openaitest.Reply{Text: `{"city": "Lisbon", "days": 3, "sights": ["tram 28", "", "belem", "alfama"]}`, Usage: usage}, true
			}
		}
		return openaitest.Reply{Text: `{"category_id": "trip", "category_name": "trip planning"}`, Usage: usage}, true
	})
	other := "golden: what is the capital of France"
	upstream.On(other, openaitest.Reply{Text: `{"category_id": "other", "category_name": "anything else"}`, Usage: usage})
	for _, tc := range []struct{ query, file string }{
		{trip, "chatflow_trip_streaming.sse.golden"},
		{other, "chatflow_trip_other_streaming.sse.golden"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			body := `{"query":"` + tc.query + `","inputs":{},"user":"golden","response_mode":"streaming","auto_generate_name":false}`
			golden(t, tc.file, streamGolden(t, p, key, body))
		})
	}
}
