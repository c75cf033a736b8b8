package conformance

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
)

// TestPublicChatflows imports every public Dify Chatflow export of the DSL corpus (files Parley's
// authors did not write) with a model fallback, and runs each that imports with the fake
// provider: the stream must end with workflow_finished, succeeded, or failed in a node on the
// test's sample inputs or for want of the Internet (the export's code raised, an API is out of
// reach). Datasets are mapped to a knowledge base of the test, as a user maps them to theirs. A
// file that does not import must be refused only for node types Parley does not run yet, agent
// strategies it does not have or tools it does not have; a file refused only for tools is
// imported again with --lenient and must run to workflow_finished, succeeded or failed at a tool
// node whose tool is missing. The tally is logged.
func TestPublicChatflows(t *testing.T) {
	files, p := publicCorpus(t, "advanced-chat")
	ctx := context.Background()
	// ran imported as they are; ranLenient only with --lenient (tools missing), as did
	// failedOnTool, whose runs failed at a tool node whose tool is missing; failed failed in a
	// node for another reason.
	var ran, ranLenient, failedOnTool, failed []string
	imported := 0
	refused := map[string]int{}
	for i, path := range files {
		name := fmt.Sprintf("public chatflow %d", i)
		args, stderr, err := importPublic(p, path, name)
		lenient := false
		if err != nil {
			onlyTools, problems := true, 0
			for _, line := range strings.Split(stderr, "\n") {
				line = strings.TrimSpace(line)
				// A file with one problem has it on the line that says the import failed.
				at := strings.Index(line, "workflow.graph.nodes[")
				if at < 0 {
					continue
				}
				line = line[at:]
				problems++
				if strings.Contains(line, "is not available on this server") {
					// A tool node's or agent node's tool this server does not have.
					tool := line[strings.Index(line, `tool "`)+len(`tool "`):]
					refused["tool "+tool[:strings.Index(tool, `"`)]]++
					continue
				}
				onlyTools = false
				if strings.Contains(line, "agent strategy") {
					refused["agent strategy"]++
					continue
				}
				if !strings.Contains(line, "is not supported yet") {
					t.Fatalf("%s: %s", filepath.Base(path), line)
				}
				typ := line[strings.Index(line, `node type "`)+len(`node type "`):]
				refused[typ[:strings.Index(typ, `"`)]]++
			}
			if !onlyTools || problems == 0 {
				continue
			}
			// Only tools are missing: imported with --lenient, the file runs, and a tool node
			// whose tool is missing fails the run saying so (an agent node's is an observation).
			if _, stderr, err := p.cliOut(append(append(args, "--lenient"), path)...); err != nil {
				t.Fatalf("%s: lenient import: %v\n%s", filepath.Base(path), err, stderr)
			}
			lenient = true
		}
		key := p.CLI(t, "keys", "create", "--app", name)
		c := newClient(t, p, key)
		par, err := c.GetAppParametersWithResponse(ctx, &client.GetAppParametersParams{})
		if err != nil || par.JSON200 == nil {
			t.Fatalf("%s: parameters: %v", filepath.Base(path), err)
		}
		inputs := sampleInputs(t, p, key, par.JSON200.UserInputForm)
		body := client.SendChatMessageJSONRequestBody{Query: "Hello from the corpus test", User: "corpus", Inputs: inputs, ResponseMode: ptr(client.Streaming)}
		evs := streamEvents(t, c, body)
		imported++
		last := evs[len(evs)-1]
		fin, _ := last.AsWorkflowFinishedEvent()
		if lenient && eventName(t, last) == "error" {
			for _, ev := range evs {
				if f, err := ev.AsWorkflowFinishedEvent(); err == nil && eventName(t, ev) == "workflow_finished" &&
					f.Data.Status == "failed" && f.Data.Error != nil && strings.Contains(*f.Data.Error, "is not available on this server") {
					failedOnTool = append(failedOnTool, filepath.Base(path))
				}
			}
			if len(failedOnTool) > 0 && failedOnTool[len(failedOnTool)-1] == filepath.Base(path) {
				continue
			}
		}
		if eventName(t, last) == "error" {
			for _, ev := range evs {
				if f, err := ev.AsWorkflowFinishedEvent(); err == nil && eventName(t, ev) == "workflow_finished" &&
					f.Data.Status == "failed" && f.Data.Error != nil && strings.Contains(*f.Data.Error, "node ") {
					failed = append(failed, filepath.Base(path)+": "+*f.Data.Error)
				}
			}
			if len(failed) > 0 && strings.HasPrefix(failed[len(failed)-1], filepath.Base(path)+": ") {
				continue
			}
		}
		if eventName(t, last) != "workflow_finished" || fin.Data.Status != "succeeded" {
			t.Fatalf("%s: the run ended with %s %+v", filepath.Base(path), eventName(t, last), fin.Data)
		}
		if lenient {
			ranLenient = append(ranLenient, filepath.Base(path))
			continue
		}
		ran = append(ran, filepath.Base(path))
	}
	types := make([]string, 0, len(refused))
	for typ, n := range refused {
		types = append(types, fmt.Sprintf("%s×%d", typ, n))
	}
	sort.Strings(types)
	t.Logf("%d of %d public Chatflows import (%d of them with --lenient); %d run to workflow_finished succeeded as they are: %s; "+
		"with --lenient %d more run (%s) and %d fail at a missing tool (%s); %d fail in a node:\n%s\n"+
		"nodes of types not run yet, other agent strategies and tools missing among the rest: %s",
		imported, len(files), len(ranLenient)+len(failedOnTool), len(ran), strings.Join(ran, ", "), len(ranLenient), strings.Join(ranLenient, ", "),
		len(failedOnTool), strings.Join(failedOnTool, ", "), len(failed), strings.Join(failed, "\n"), strings.Join(types, ", "))
	if len(ran) < minPublicChatflowsRun {
		t.Fatalf("only %d public Chatflows ran", len(ran))
	}
}

// minPublicChatflowsRun is how many public Chatflows run to success as they are today; it only
// goes up.
const minPublicChatflowsRun = 16

// publicCorpus is the public Dify exports of one app mode (a folder of the DSL corpus), and a
// server of the test's own to import them into.
func publicCorpus(t *testing.T, mode string) ([]string, *Parley) {
	t.Helper()
	return publicCorpusFiles(t, mode), startParley(t, "sqlite")
}

// importPublic imports the export at path as the published app name, with a model fallback.
// Its datasets are Dify ids, which import unmapped: the app is deleted and imported again with
// each mapped to the handbook knowledge base, as a user would map them to theirs, so that the
// run retrieves (TestUnmappedDatasetsRun runs one unmapped). It imports with --strict, so that
// a file whose tools are missing is refused and counted, and imported again with --lenient
// (what an import without --strict does). It returns the import's arguments
// without the path (to import again with more flags), and the import's stderr and error.
func importPublic(p *Parley, path, name string) (args []string, stderr string, err error) {
	args = []string{"apps", "import", "--publish", "--strict", "--model-fallback", "openai:gpt-4o-mini", "--name", name}
	_, stderr, err = p.cliOut(append(args, path)...)
	if refs := unmappedRefs(stderr); err == nil && len(refs) > 0 {
		if _, stderr, err = p.cliOut("apps", "delete", name); err != nil {
			return args, stderr, err
		}
		for _, ref := range refs {
			args = append(args, "--dataset", ref+"=handbook")
		}
		_, stderr, err = p.cliOut(append(args, path)...)
	}
	return args, stderr, err
}

// unmappedRefs are the datasets an import's notes say it left unmapped.
func unmappedRefs(stderr string) []string {
	var refs []string
	for _, line := range strings.Split(stderr, "\n") {
		if _, rest, ok := strings.Cut(line, "import again with --dataset "); ok && strings.Contains(line, "unmapped dataset: ") {
			ref, _, _ := strings.Cut(rest, "=KNOWLEDGE_BASE")
			if !slices.Contains(refs, ref) {
				refs = append(refs, ref)
			}
		}
	}
	return refs
}

// sampleInputs fills the required inputs of an app's form for the user "corpus": an option of a
// select, a number, an uploaded text document for a file input (as a list for file-list), and a
// short text for the rest.
func sampleInputs(t *testing.T, p *Parley, key string, form []map[string]client.InputFormItem) map[string]any {
	t.Helper()
	inputs := map[string]any{}
	for _, item := range form {
		for typ, f := range item {
			if !f.Required {
				continue
			}
			switch {
			case typ == "file" || typ == "file-list":
				// A file input takes an uploaded file: a short text document.
				doc := map[string]any{"type": "document", "transfer_method": "local_file",
					"upload_file_id": uploadAs(t, p, key, "corpus", "sample.txt", "text/plain", []byte("A sample document of the corpus test."))}
				if inputs[f.Variable] = doc; typ == "file-list" {
					inputs[f.Variable] = []any{doc}
				}
			case typ == "select" && f.Options != nil && len(*f.Options) > 0:
				inputs[f.Variable] = (*f.Options)[0]
			case typ == "number":
				inputs[f.Variable] = 1
			default:
				inputs[f.Variable] = "sample"
			}
		}
	}
	return inputs
}
