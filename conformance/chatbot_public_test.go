package conformance

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
)

// TestPublicChatbots imports every public Dify Chatbot, Legacy Agent and Completion export of the
// DSL corpus as a migrating user would (a model fallback; tools this server lacks kept missing;
// datasets mapped to a knowledge base of the test) and sends each one message: every export
// imports, and every app answers it (a message_end in blocking mode, 200), an agent whose tools
// are missing included, since a missing tool is an observation for the model, never an error.
func TestPublicChatbots(t *testing.T) {
	var files []string
	for _, mode := range []string{"chat", "agent-chat", "completion"} {
		files = append(files, publicCorpusFiles(t, mode)...)
	}
	p := startParley(t, "sqlite")
	ctx := context.Background()
	missing := 0
	for i, path := range files {
		name := fmt.Sprintf("public chatbot %d", i)
		args := []string{"apps", "import", "--model-fallback", "openai:gpt-4o-mini", "--name", name}
		_, stderr, err := p.cliOut(append(args, path)...)
		if refs := unmappedRefs(stderr); err == nil && len(refs) > 0 {
			p.CLI(t, "apps", "delete", name)
			for _, ref := range refs {
				args = append(args, "--dataset", ref+"=handbook")
			}
			_, stderr, err = p.cliOut(append(args, path)...)
		}
		if err != nil {
			t.Fatalf("%s does not import: %v\n%s", filepath.Base(path), err, stderr)
		}
		missing += strings.Count(stderr, "parley: missing tool: ")
		key := p.CLI(t, "keys", "create", "--app", name)
		c := newClient(t, p, key)
		par, err := c.GetAppParametersWithResponse(ctx, &client.GetAppParametersParams{})
		if err != nil || par.JSON200 == nil {
			t.Fatalf("%s: parameters: %v", filepath.Base(path), err)
		}
		inputs := sampleInputs(t, p, key, par.JSON200.UserInputForm)
		if strings.Contains(path, string(filepath.Separator)+"completion"+string(filepath.Separator)) {
			r, err := c.SendCompletionMessageWithResponse(ctx, nil, client.SendCompletionMessageJSONRequestBody{Inputs: inputs, User: "corpus"})
			if err != nil || r.StatusCode() != http.StatusOK || r.JSON200 == nil {
				t.Fatalf("%s: completion: %v %d %s", filepath.Base(path), err, r.StatusCode(), r.Body)
			}
			continue
		}
		// Agent apps answer in streaming mode only, as in Dify.
		evs := streamEvents(t, c, client.SendChatMessageJSONRequestBody{Query: "Hello from the corpus test", User: "corpus", Inputs: inputs,
			ResponseMode: ptr(client.Streaming)})
		if last := evs[len(evs)-1]; eventName(t, last) != "message_end" {
			t.Fatalf("%s: the stream ended with %s", filepath.Base(path), eventName(t, last))
		}
	}
	t.Logf("%d public Chatbot, Legacy Agent and Completion exports import and answer; %d of their tools are kept missing", len(files), missing)
}

// publicCorpusFiles is the public Dify exports of one app mode (a folder of the DSL corpus).
func publicCorpusFiles(t *testing.T, mode string) []string {
	t.Helper()
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	files, err := filepath.Glob(filepath.Join("..", "internal", "apps", "dsl", "testdata", "public", mode, "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("corpus: %v", err)
	}
	return files
}
