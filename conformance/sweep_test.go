package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers"
)

// The sweep sends every operation of api/openapi.yaml a valid-ish request built from the
// contract, then that request spoiled one way at a time: each body member wrong-typed, out of its
// enum, empty, very long, numerically absurd, null; nested objects replaced; duplicate keys;
// broken JSON and content types; path parameters that are no id, unknown or very long; query
// parameters wrong-typed and overflowing; multipart bodies without a boundary or with garbage.
// Whatever the server answers, it must be a 2xx or a 4xx that carries the Error body — never a
// 5xx — and every response must match the contract (the server runs with response validation
// enforced, so a violation it notices would itself surface as a 500).

// sweepBodyCap bounds the body mutations per operation (taken round-robin across the members, so
// every member gets its first mutations before any gets its last); the other families are small.
const sweepBodyCap = 150

// sweepLong is the length of a "very long" string: well past every maxLength of the contract,
// well under the body limit.
const sweepLong = 70_000

// sweepProbe is one request of the sweep.
type sweepProbe struct {
	what   string
	method string
	path   string // escaped, with the query
	ct     string
	body   []byte
}

// sweepOp is one operation of the contract with what the sweep needs to call it.
type sweepOp struct {
	id, method, tmpl string
	op               *openapi3.Operation
	params           openapi3.Parameters
	key              string
	// headers are the values of the operation's header parameters (X-App-Code).
	headers map[string]string
	// root says the path has servers of its own: it is served at the server's root.
	root bool
}

// sweepFixtures are real resources, by the parameter or member name that refers to them.
type sweepFixtures map[string]string

// TestSweep drives every operation of the contract with hostile variations of a valid request.
func TestSweep(t *testing.T) {
	c := loadContract(t)
	forEachServer(t, func(t *testing.T, p *Parley) {
		start := time.Now()
		fx := sweepSetup(t, p)
		hc := newContractClient(t)
		ops := sweepOperations(t, c, p)
		total, ok2xx := 0, map[string]bool{}
		for _, op := range ops {
			for _, prm := range op.params {
				if prm.Value != nil && prm.Value.In == openapi3.ParameterInHeader && prm.Value.Required {
					if op.headers == nil {
						op.headers = map[string]string{}
					}
					op.headers[prm.Value.Name] = op.paramValue(prm.Value, fx.forOp(op))
				}
			}
			for _, pr := range op.probes(c, fx.forOp(op)) {
				total++
				if status := sweepSend(t, hc, p, op, pr, c); status < 300 {
					ok2xx[op.id] = true
				}
			}
		}
		t.Logf("sweep: %d operations, %d requests in %s", len(ops), total, time.Since(start).Round(time.Millisecond))
		for _, op := range ops {
			// A sweep whose requests all stop at a 404 or at validation would say little about
			// the handlers behind: each operation must have succeeded at least once.
			if !ok2xx[op.id] && neverSucceeds[op.id] == "" && (binary != "" || externalNoFixture[op.id] == "") {
				t.Errorf("%s: no request of the sweep succeeded; its baseline needs a fixture", op.id)
			}
		}
		if p.logs != nil {
			for _, line := range strings.Split(p.logs.String(), "\n") {
				if strings.Contains(line, `"msg":"panic"`) {
					t.Errorf("server recovered a panic: %.600s", line)
				}
			}
		}
	})
}

// externalNoFixture names the operations the sweep cannot make succeed against an external
// server (PARLEY_URL), and why; their mutations are still sent and must still be answered with a
// 4xx and the Error body.
var externalNoFixture = map[string]string{
	// A tool file exists only once an agent's tool returned one, and the sweep registers that
	// tool through the CLI, on a server it restarts with the loopback allowance.
	"getToolFile": "needs a tool registered through the CLI",
	// Only a Chatflow's conversations have variables, and the sweep imports its Chatflow
	// through the CLI.
	"updateConversationVariable": "needs a Chatflow imported through the CLI",
	// Speech needs an app with the speech features on; the sweep makes a key of one through the
	// CLI.
	"audioToText": "needs a key of the speaker app, made through the CLI",
	"textToAudio": "needs a key of the speaker app, made through the CLI",
	// A passport needs the code of a site, which the sweep reads through the CLI.
	"getPassport": "needs a site code, printed by the CLI",
}

func init() {
	// A webhook exists once a Workflow app that starts from one is imported and published,
	// which the sweep does through the CLI.
	for _, m := range []string{"Get", "Post", "Put", "Patch", "Delete"} {
		externalNoFixture["callWebhook"+m] = "needs a webhook app imported through the CLI"
		externalNoFixture["callWebhookDebug"+m] = "needs a webhook app imported through the CLI"
	}
}

// sweepWebhooks imports a Workflow app with a webhook for each method the contract declares,
// each taking JSON without required parameters, and returns their ids by method (Get, Post, …).
func sweepWebhooks(t *testing.T, p *Parley) map[string]string {
	t.Helper()
	methods := []string{"Get", "Post", "Put", "Patch", "Delete"}
	var nodes, edges strings.Builder
	for _, m := range methods {
		fmt.Fprintf(&nodes, "    - {id: hook-%s, data: {type: trigger-webhook, title: %s, method: %s, content_type: application/json}}\n",
			strings.ToLower(m), m, strings.ToUpper(m))
		fmt.Fprintf(&nodes, "    - {id: end-%s, data: {type: end, title: End, outputs: []}}\n", strings.ToLower(m))
		fmt.Fprintf(&edges, "    - {id: e-%s, source: hook-%s, target: end-%s}\n", strings.ToLower(m), strings.ToLower(m), strings.ToLower(m))
	}
	doc := "version: 0.5.0\nkind: app\napp: {name: Sweep Webhooks, mode: workflow}\nworkflow:\n  graph:\n    nodes:\n" +
		nodes.String() + "    edges:\n" + edges.String()
	path := filepath.Join(t.TempDir(), "sweep-webhooks.yml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	p.CLI(t, "apps", "import", "--publish", path)
	out := map[string]string{}
	for _, tr := range triggersOf(t, p, "Sweep Webhooks") {
		id := tr.what[strings.LastIndex(tr.what, "/")+1:]
		for _, m := range methods {
			if tr.node == "hook-"+strings.ToLower(m) {
				out[m] = id
			}
		}
	}
	if len(out) != len(methods) {
		t.Fatalf("sweep webhooks: %v", out)
	}
	return out
}

// audioOps are the speech operations, which the sweep runs with a key of the `speaker` app (its
// speech features are on) when it controls the server.
var audioOps = map[string]bool{"audioToText": true, "textToAudio": true}

var sweepSpeakerKeys sync.Map // *Parley → key of the speaker app

func sweepSpeakerKey(t *testing.T, p *Parley) string {
	t.Helper()
	if k, ok := sweepSpeakerKeys.Load(p); ok {
		return k.(string)
	}
	k := p.CLI(t, "keys", "create", "--app", "speaker")
	sweepSpeakerKeys.Store(p, k)
	return k
}

// neverSucceeds names the operations Parley declares only to refuse them, and why; every
// request to them must still be answered with a 4xx and the Error body.
var neverSucceeds = map[string]string{
	// Datasource plugins are not available; the local-file datasource has nothing to run.
	"runPipelineDatasourceNode": "answers 400 naming what is not available",
}

// sweepSend sends one probe and checks the answer: no 5xx, and an error is the Error body whose
// status is the HTTP status. It returns the status.
func sweepSend(t *testing.T, hc *http.Client, p *Parley, op sweepOp, pr sweepProbe, c *contract) int {
	t.Helper()
	var body io.Reader
	if pr.body != nil {
		body = bytes.NewReader(pr.body)
	}
	base := p.URL
	if op.root {
		// An operation served at the server's root, beside /v1 (the webhooks).
		base = strings.TrimSuffix(p.URL, "/v1")
	}
	req, err := http.NewRequest(pr.method, base+pr.path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", op.id, pr.what, err)
	}
	if op.key != "" {
		req.Header.Set("Authorization", "Bearer "+op.key)
	}
	for k, v := range op.headers {
		req.Header.Set(k, v)
	}
	if pr.ct != "" {
		req.Header.Set("Content-Type", pr.ct)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", op.id, pr.what, err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Errorf("%s %s: reading the answer: %v", op.id, pr.what, err)
	}
	if resp.StatusCode >= 500 {
		t.Errorf("%s %s: %d %.300s\n  request: %s %.300s ct=%q body=%.300s", op.id, pr.what, resp.StatusCode, raw,
			pr.method, pr.path, pr.ct, pr.body)
		return resp.StatusCode
	}
	if pr.what == "baseline" && resp.StatusCode >= 300 {
		t.Logf("%s baseline: %d %.200s", op.id, resp.StatusCode, raw)
	}
	if resp.StatusCode >= 400 && pr.method != http.MethodHead {
		var e map[string]any
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Errorf("%s %s: %d error body is not JSON: %.300s", op.id, pr.what, resp.StatusCode, raw)
		} else if err := c.errSchemaFor(req.URL.Path).VisitJSON(e, openapi3.MultiErrors()); err != nil {
			t.Errorf("%s %s: %d error body is not the Error body: %v", op.id, pr.what, resp.StatusCode, err)
		} else if st, _ := e["status"].(float64); int(st) != resp.StatusCode && hasErrorStatus(req.URL.Path) {
			t.Errorf("%s %s: body status %v, HTTP status %d", op.id, pr.what, e["status"], resp.StatusCode)
		}
	}
	return resp.StatusCode
}

// appInfoName is the name of the app of key, as GET /info says.
func appInfoName(t *testing.T, p *Parley, key string) string {
	t.Helper()
	r, err := newClient(t, p, key).GetAppInfoWithResponse(context.Background(), nil)
	if err != nil || r.JSON200 == nil {
		t.Fatalf("app info: %v %s", err, r.Body)
	}
	return r.JSON200.Name
}

// sweepSetup creates what the paths and bodies refer to: a high-quality knowledge base with a
// parent-child document (so chunks and child chunks exist) and one more such document for each
// operation that re-indexes a document or changes its state, a metadata field, a tag bound to
// the knowledge base, an upload, a conversation with one message, and (on a server of its own)
// a file an agent's tool returned, with its signed link.
func sweepSetup(t *testing.T, p *Parley) sweepFixtures {
	t.Helper()
	ctx := context.Background()
	fx := sweepFixtures{"user": "sweeper", "query": "vacation days", "rating": "like", "content": "Vacation is granted yearly.",
		"model@getOpenAIModel": appInfoName(t, p, p.AppKey)}
	if binary != "" {
		// The code of the chatbot's web page, for GET /passport.
		page := p.CLI(t, "apps", "site", "chatbot")
		fx["X-App-Code"] = page[strings.LastIndex(page, "/")+1:]
		// First, as it restarts the server: with links that live an hour, not five minutes, so
		// that the fixture's never expires during the sweep, however slow the machine.
		c := newClient(t, p, chartAgentKey(t, p, "PARLEY_FILES_ACCESS_TIMEOUT=1h"))
		link := toolFileEvent(t, askAgent(t, c, "sweep chart", providers.ToolCall{Name: "getChart", Arguments: `{}`}), "getChart").Url
		u, err := url.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		fx["file@getToolFile"] = path.Base(u.Path)
		for _, name := range []string{"timestamp", "nonce", "sign"} {
			fx[name+"@getToolFile"] = q.Get(name)
		}
		w := sweepWorkflow(t, p)
		fx["workflow_id@runWorkflowVersion"], fx["workflow_run_id"], fx["task_id@stopWorkflowTask"] = w.versionID, w.runID, w.taskID
		_, fx["form_token"] = sweepHumanInput(t, p)
		fx["action"] = "approve"
		for method, id := range sweepWebhooks(t, p) {
			fx["webhook_id@callWebhook"+method], fx["webhook_id@callWebhookDebug"+method] = id, id
		}
	}
	kc := newClient(t, p, p.KnowledgeKey)
	ac := newClient(t, p, p.AppKey)

	ds := segDataset(t, kc, "sweep", true)
	doc := func(name string) (string, string) {
		return addText(t, kc, ds, client.CreateDocumentByTextJSONRequestBody{Name: name,
			Text:    "Vacation days are granted every January.\nUnused days expire in March.\n\nThe canteen serves lunch at noon.\nCoffee is free.",
			DocForm: ptr("hierarchical_model"), ProcessRule: sweepHierarchicalRule()})
	}
	id, batch := doc("sweep fixture")
	batches := []string{batch}
	for _, op := range sweepOperations(t, loadContract(t), p) {
		if op.rank() == 3 {
			own, b := doc("sweep fixture for " + op.id)
			fx["document_id@"+op.id] = own
			batches = append(batches, b)
		}
	}
	for _, b := range batches {
		if st := waitIndexing(t, kc, ds, b); st.IndexingStatus != client.IndexingStatusCompleted {
			t.Fatalf("sweep document: %+v", st)
		}
	}
	segs := listSegments(t, kc, ds, id, nil)
	if len(segs.Data) == 0 || len(segs.Data[0].ChildChunks) == 0 {
		t.Fatalf("sweep document has no parent chunk with children: %+v", segs)
	}
	fx["dataset_id"], fx["document_id"], fx["batch"] = ds, id, batch
	// Parley's External Knowledge API serves the same knowledge base.
	fx["knowledge_id"] = ds
	fx["segment_id"], fx["child_chunk_id"] = segs.Data[0].Id.String(), segs.Data[0].ChildChunks[0].Id.String()

	mr, err := kc.CreateMetadataFieldWithResponse(ctx, ds, client.CreateMetadataFieldJSONRequestBody{Name: "sweep_field", Type: "string"})
	if err != nil || mr.JSON201 == nil {
		t.Fatalf("metadata field: %v %s", err, mr.Body)
	}
	fx["metadata_id"] = mr.JSON201.Id
	fx["name@updateMetadataField"], fx["name@updateTag"] = "renamed_field", "renamed tag"

	tr, err := kc.CreateTagWithResponse(ctx, client.CreateTagJSONRequestBody{Name: "sweep fixture"})
	if err != nil || tr.JSON200 == nil {
		t.Fatalf("tag: %v %s", err, tr.Body)
	}
	fx["tag_id"] = tr.JSON200.Id.String()
	if br, err := kc.BindTagsWithResponse(ctx, client.BindTagsJSONRequestBody{TagIds: []string{fx["tag_id"]}, TargetId: ds}); err != nil || br.StatusCode() != http.StatusNoContent {
		t.Fatalf("bind tag: %v %s", err, br.Body)
	}
	fx["target_id"] = ds

	_, f, e := p.upload(t, newContractClient(t), part{field: "file", filename: "sweep.png", contentType: "image/png", data: pngBytes(t)},
		part{field: "user", data: []byte(fx["user"])})
	if f.Id.String() == uuid.Nil.String() {
		t.Fatalf("upload: %+v", e)
	}
	fx["upload_file_id"] = f.Id.String()
	// The upload's end user and its preview; its signed link (made after the restart above, so
	// it lives an hour) for the keyless route.
	fx["end_user_id"], fx["file_id@previewFile"] = f.CreatedBy, f.Id.String()
	if f.SourceUrl == nil {
		t.Fatalf("upload without source_url: %+v", f)
	}
	su, err := url.Parse(*f.SourceUrl)
	if err != nil {
		t.Fatal(err)
	}
	fx["file_id@getSignedFile"] = path.Base(path.Dir(su.Path))
	for _, name := range []string{"timestamp", "nonce", "sign"} {
		fx[name+"@getSignedFile"] = su.Query().Get(name)
	}
	// A file uploaded for the knowledge pipeline, which its run refers to.
	pbody, pct := formBody(part{field: "file", filename: "sweep-pipeline.txt", contentType: "text/plain", data: []byte("Pipeline text.")})
	preq, _ := http.NewRequest(http.MethodPost, p.URL+"/datasets/pipeline/file-upload", bytes.NewReader(pbody))
	preq.Header.Set("Authorization", "Bearer "+p.KnowledgeKey)
	preq.Header.Set("Content-Type", pct)
	presp, err := newContractClient(t).Do(preq)
	if err != nil {
		t.Fatal(err)
	}
	var pf client.PipelineUploadedFile
	err = json.NewDecoder(presp.Body).Decode(&pf)
	presp.Body.Close()
	if err != nil || presp.StatusCode != http.StatusCreated {
		t.Fatalf("pipeline upload: %d %v", presp.StatusCode, err)
	}
	fx["reference"], fx["node_id"] = pf.Id.String(), "local_file"

	cr, err := ac.SendChatMessageWithResponse(ctx, nil, chatBody(marker(t, "sweep"), fx["user"], false))
	if err != nil || cr.JSON200 == nil {
		t.Fatalf("chat: %v %s", err, cr.Body)
	}
	fx["conversation_id"], fx["message_id"] = cr.JSON200.ConversationId.String(), cr.JSON200.MessageId.String()
	// Annotations: one to update, one to delete, and a job to read (switching reply on with a
	// model that does not exist: it ends in error and leaves reply off).
	for _, op := range []string{"updateAnnotation", "deleteAnnotation"} {
		ar, err := ac.CreateAnnotationWithResponse(ctx, client.AnnotationRequest{Question: "Sweep question for " + op + "?", Answer: "Sweep answer."})
		if err != nil || ar.JSON201 == nil {
			t.Fatalf("annotation: %v %s", err, ar.Body)
		}
		fx["annotation_id@"+op] = ar.JSON201.Id
	}
	jr, err := ac.SetAnnotationReplyWithResponse(ctx, client.SetAnnotationReplyParamsActionEnable, client.AnnotationReplyRequest{
		EmbeddingProviderName: "openai", EmbeddingModelName: "sweep-no-such-model", ScoreThreshold: 0.9})
	if err != nil || jr.JSON200 == nil {
		t.Fatalf("annotation job: %v %s", err, jr.Body)
	}
	fx["job_id"] = jr.JSON200.JobId
	if binary != "" {
		// Text to speech reads a message of the speaker app by its id.
		sr, err := newClient(t, p, sweepSpeakerKey(t, p)).SendChatMessageWithResponse(ctx, nil, chatBody(marker(t, "sweep speech"), fx["user"], false))
		if err != nil || sr.JSON200 == nil {
			t.Fatalf("speaker chat: %v %s", err, sr.Body)
		}
		fx["message_id@textToAudio"] = sr.JSON200.MessageId.String()
	}
	fx["task_id"] = cr.JSON200.TaskId.String()
	fx["first_id"], fx["last_id"] = fx["message_id"], fx["conversation_id"]
	// The Chatbot's conversation has no variables: its list is empty, the page after none.
	fx["last_id@listConversationVariables"] = ""
	if binary != "" {
		v := sweepVariables(t, p)
		for op := range variablesOps {
			fx["conversation_id@"+op] = v.conv
		}
		fx["variable_id@updateConversationVariable"], fx["last_id@listConversationVariables"] = varNickname, varNickname
	}
	return fx
}

// variablesOps are the conversation-variable operations, which the sweep runs on a Chatflow
// conversation of its own when it controls the server.
var variablesOps = map[string]bool{"listConversationVariables": true, "updateConversationVariable": true}

// sweepVariablesFixture is a Chatflow with conversation variables (testdata/chatflow-variables.yml),
// its key, and a conversation of the sweep's user.
type sweepVariablesFixture struct{ key, conv string }

var sweepVariablesFixtures sync.Map // *Parley → *sweepVariablesFixture

func sweepVariables(t *testing.T, p *Parley) *sweepVariablesFixture {
	t.Helper()
	if v, ok := sweepVariablesFixtures.Load(p); ok {
		return v.(*sweepVariablesFixture)
	}
	name := "Sweep Variables " + strings.ReplaceAll(t.Name(), "/", "-")
	p.CLI(t, "apps", "import", variablesDSL(t, name))
	p.CLI(t, "apps", "publish", name)
	v := &sweepVariablesFixture{key: p.CLI(t, "keys", "create", "--app", name)}
	r, err := newClient(t, p, v.key).SendChatMessageWithResponse(context.Background(),
		nil, client.SendChatMessageJSONRequestBody{Query: "sweep", User: "sweeper", Inputs: map[string]any{}})
	if err != nil || r.JSON200 == nil {
		t.Fatalf("sweep Chatflow: %v %s", err, r.Body)
	}
	v.conv = r.JSON200.ConversationId.String()
	sweepVariablesFixtures.Store(p, v)
	return v
}

// workflowOps are the Workflow Runs operations, which the sweep runs on a Workflow app of its own
// when it controls the server.
var workflowOps = map[string]bool{"runWorkflow": true, "runWorkflowVersion": true, "getWorkflowRun": true,
	"stopWorkflowTask": true, "listWorkflowLogs": true, "streamWorkflowEvents": true}

// humanInputOps are the Human Input operations, which the sweep runs on a Chatflow paused at a
// form (its fields are named as the inputs fixture's members, so that the baseline submits it)
// when it controls the server.
var humanInputOps = map[string]bool{"getHumanInputForm": true, "submitHumanInputForm": true}

var sweepHumanInputKeys sync.Map // *Parley → key of the paused Chatflow

// sweepHumanInput imports the review Chatflow with the inputs fixture's fields, pauses a run of
// it for the sweep's user and returns its key and the form's token.
func sweepHumanInput(t *testing.T, p *Parley) (key, token string) {
	t.Helper()
	if k, ok := sweepHumanInputKeys.Load(p); ok {
		kt := k.([2]string)
		return kt[0], kt[1]
	}
	var fields strings.Builder
	for _, name := range []string{"tone", "name", "topic"} {
		fields.WriteString("        - {type: paragraph, output_variable_name: " + name + ", default: null}\n")
	}
	key = exampleApp(t, p, "../docs/examples/chatflow-review.yml", "Review Desk", "Sweep Review "+strings.ReplaceAll(t.Name(), "/", "-"),
		"        - type: paragraph\n          output_variable_name: comment\n          default: {type: constant, selector: [], value: ''}\n",
		fields.String())
	_, token, _, _ = hiPause(t, p, key, "sweep review", "sweeper")
	sweepHumanInputKeys.Store(p, [2]string{key, token})
	return key, token
}

// sweepWorkflowFixture is the example Workflow app (docs/examples/workflow-basic.yml), published,
// its key, and one finished run of the sweep's user.
type sweepWorkflowFixture struct{ key, versionID, runID, taskID string }

var sweepWorkflowFixtures sync.Map // *Parley → *sweepWorkflowFixture

func sweepWorkflow(t *testing.T, p *Parley) *sweepWorkflowFixture {
	t.Helper()
	if v, ok := sweepWorkflowFixtures.Load(p); ok {
		return v.(*sweepWorkflowFixture)
	}
	name := "Sweep Workflow " + strings.ReplaceAll(t.Name(), "/", "-")
	w := &sweepWorkflowFixture{key: exampleApp(t, p, workflowExample, "Topic Writer", name)}
	r, err := newClient(t, p, w.key).RunWorkflowWithResponse(context.Background(), nil, client.RunWorkflowJSONRequestBody{
		Inputs: bodyFixtures["inputs"].(map[string]any), User: "sweeper", ResponseMode: ptr(client.WorkflowBlocking)})
	if err != nil || r.JSON200 == nil || r.JSON200.Data.Status != "succeeded" {
		t.Fatalf("sweep Workflow run: %v %s", err, r.Body)
	}
	w.versionID, w.runID, w.taskID = r.JSON200.Data.WorkflowId, r.JSON200.WorkflowRunId.String(), r.JSON200.TaskId.String()
	sweepWorkflowFixtures.Store(p, w)
	return w
}

// forOp is fx as op sees it: "name@op" overrides "name". An operation that re-indexes the
// document or changes its state gets a document of its own, so that it finds it indexed and
// every other one still does; a rename gets a name nothing has yet.
func (fx sweepFixtures) forOp(op sweepOp) sweepFixtures {
	out := maps.Clone(fx)
	for k, v := range fx {
		if name, id, ok := strings.Cut(k, "@"); ok {
			delete(out, k)
			if id == op.id {
				out[name] = v
			}
		}
	}
	return out
}

func sweepHierarchicalRule() *client.ProcessRule {
	return &client.ProcessRule{Mode: "hierarchical", Rules: &client.ProcessRuleRules{
		PreProcessingRules:   &[]client.PreProcessingRule{},
		ParentMode:           ptr("paragraph"),
		Segmentation:         &client.Segmentation{Separator: ptr("\n\n"), MaxTokens: ptr(500)},
		SubchunkSegmentation: &client.Segmentation{Separator: ptr("\n"), MaxTokens: ptr(200)},
	}}
}

// sweepOperations lists the contract's operations in an order that keeps the fixtures alive as
// long as possible: reads, then creations and leaf updates, then whatever re-indexes or changes
// the state of the document, then deletions, deepest resource first.
func sweepOperations(t *testing.T, c *contract, p *Parley) []sweepOp {
	t.Helper()
	var ops []sweepOp
	for tmpl, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			o := sweepOp{id: op.OperationID, method: method, tmpl: tmpl, op: op, root: len(item.Servers) > 0}
			o.params = append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...)
			var scheme string
			if op.Security != nil && len(*op.Security) > 0 {
				for name := range (*op.Security)[0] {
					scheme = name
				}
			}
			switch {
			case scheme == "AppKey" && strings.Contains(op.OperationID, "Completion"):
				o.key = p.CompletionKey(t)
			case scheme == "AppKey" && audioOps[op.OperationID] && binary != "":
				o.key = sweepSpeakerKey(t, p)
			case scheme == "AppKey" && variablesOps[op.OperationID] && binary != "":
				// Conversation variables exist in a Chatflow's conversations only.
				o.key = sweepVariables(t, p).key
			case scheme == "AppKey" && humanInputOps[op.OperationID] && binary != "":
				o.key, _ = sweepHumanInput(t, p)
			case scheme == "AppKey" && workflowOps[op.OperationID] && binary != "":
				// The Workflow Runs group answers Workflow apps only.
				o.key = sweepWorkflow(t, p).key
			case scheme == "AppKey":
				o.key = p.AppKey
			case scheme == "KnowledgeKey":
				o.key = p.KnowledgeKey
			case op.Security != nil && len(*op.Security) == 0:
				// A public operation (a signed tool file link): no key.
			default:
				t.Fatalf("%s: no key scheme the sweep knows (%q)", op.OperationID, scheme)
			}
			ops = append(ops, o)
		}
	}
	rank := sweepOp.rank
	sort.Slice(ops, func(i, j int) bool {
		a, b := ops[i], ops[j]
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra < rb
		}
		if da, db := strings.Count(a.tmpl, "/"), strings.Count(b.tmpl, "/"); da != db && rank(a) == 4 {
			return da > db
		}
		return a.id < b.id
	})
	return ops
}

// rank orders the operations: reads, then creations and leaf updates, then what re-indexes or
// changes the state of the document, then deletions.
func (o sweepOp) rank() int {
	switch {
	case o.method == http.MethodDelete:
		return 4
	case strings.Contains(o.id, "updateDocument") || o.id == "toggleBuiltInMetadata":
		return 3
	case o.method == http.MethodGet:
		return 0
	}
	return 1
}

// probes builds the baseline and its mutations.
func (o sweepOp) probes(c *contract, fx sweepFixtures) []sweepProbe {
	pathVals := map[string]string{}
	query := url.Values{}
	for _, ref := range o.params {
		prm := ref.Value
		v := o.paramValue(prm, fx)
		switch prm.In {
		case openapi3.ParameterInPath:
			pathVals[prm.Name] = v
		case openapi3.ParameterInQuery:
			if _, known := fx[prm.Name]; prm.Required || known {
				query.Set(prm.Name, v)
			}
		}
	}
	build := func(path map[string]string, q url.Values) string {
		s := o.tmpl
		for k, v := range path {
			s = strings.ReplaceAll(s, "{"+k+"}", url.PathEscape(v))
		}
		if enc := q.Encode(); enc != "" {
			s += "?" + enc
		}
		return s
	}
	base := sweepProbe{what: "baseline", method: o.method, path: build(pathVals, query)}

	var bodyProbes []sweepProbe
	if rb := o.op.RequestBody; rb != nil && rb.Value != nil {
		if mt := rb.Value.Content.Get("application/json"); mt != nil {
			body := o.baselineJSON(mt, fx)
			base.ct, base.body = "application/json", mustMarshal(body)
			bodyProbes = jsonMutations(base, mt.Schema.Value, body, sweepBodyCap)
			bodyProbes = append(bodyProbes, wholeBodyMutations(base, body)...)
		} else if mt := rb.Value.Content.Get("multipart/form-data"); mt != nil {
			base.ct, base.body = o.multipartBaseline(fx, nil)
			bodyProbes = o.multipartMutations(c, fx, base)
		}
	}

	probes := []sweepProbe{base}
	probes = append(probes, bodyProbes...)
	for _, ref := range o.params {
		prm := ref.Value
		for _, bad := range paramMutations(prm) {
			pv, q := maps.Clone(pathVals), cloneValues(query)
			if prm.In == openapi3.ParameterInPath {
				pv[prm.Name] = bad
			} else if prm.In == openapi3.ParameterInQuery {
				q.Set(prm.Name, bad)
			} else {
				continue
			}
			pr := base
			pr.what = fmt.Sprintf("%s %s=%.40q", prm.In, prm.Name, bad)
			pr.path = build(pv, q)
			probes = append(probes, pr)
		}
		if prm.In == openapi3.ParameterInQuery {
			// A repeated parameter: the first value valid, the second not.
			q := cloneValues(query)
			q.Set(prm.Name, o.paramValue(prm, fx))
			q.Add(prm.Name, "x")
			pr := base
			pr.what = "query " + prm.Name + " repeated"
			pr.path = build(pathVals, q)
			probes = append(probes, pr)
		}
	}
	// Methods the contract does not declare here: 405, never a handler.
	for _, m := range []string{http.MethodPut, http.MethodHead} {
		pr := base
		pr.what, pr.method = "method "+m, m
		probes = append(probes, pr)
	}
	if o.method == http.MethodDelete || o.method == http.MethodGet {
		// The baseline of a deletion goes last, so that its mutations still find the resource;
		// so does a read's, which then sees what the mutations created.
		probes = append(probes[1:], probes[0])
	}
	return probes
}

// paramValue is a valid value of a parameter: a fixture by name, else from its schema.
func (o sweepOp) paramValue(prm *openapi3.Parameter, fx sweepFixtures) string {
	if prm.Name == "action" {
		return "enable"
	}
	if v, ok := fx[prm.Name]; ok {
		return v
	}
	if prm.Schema != nil && prm.Schema.Value != nil {
		switch v := sample(prm.Schema.Value, 0).(type) {
		case string:
			return v
		case []any:
			if len(v) > 0 {
				return fmt.Sprint(v[0])
			}
			return ""
		default:
			return fmt.Sprint(v)
		}
	}
	return "x"
}

// baselineJSON is the operation's first example when it has one, else its required members,
// with ids and the end user swapped for the fixtures.
func (o sweepOp) baselineJSON(mt *openapi3.MediaType, fx sweepFixtures) any {
	var ex any
	if mt.Example != nil {
		ex = mt.Example
	} else if len(mt.Examples) > 0 {
		names := make([]string, 0, len(mt.Examples))
		for n := range mt.Examples {
			names = append(names, n)
		}
		slices.Sort(names)
		if e := mt.Examples[names[0]]; e != nil && e.Value != nil {
			ex = e.Value.Value
		}
	}
	if ex == nil {
		ex = sample(mt.Schema.Value, 0)
	}
	// A deep copy, so that the contract's example is never modified.
	v := jsonCopy(ex)
	fillFixtures(v, mt.Schema.Value, fx, 0)
	return useFixtures(v, fx)
}

// jsonCopy is a deep copy of a JSON value, made through its encoding.
func jsonCopy(v any) any {
	var c any
	_ = json.Unmarshal(mustMarshal(v), &c)
	return c
}

// bodyFixtures are members that are not strings: the chatbot's form requires its inputs, and a
// rename without a name must ask for one to be generated.
var bodyFixtures = map[string]any{"inputs": map[string]any{"tone": "warm", "name": "Ada", "topic": "tides"}, "auto_generate": true}

// fillFixtures gives the optional members of v (and of its nested objects) that name a fixture,
// so that the request reaches the fixture instead of stopping at a missing member.
func fillFixtures(v any, s *openapi3.Schema, fx sweepFixtures, depth int) {
	if s == nil || depth > 4 {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := schemaProps(s)
		for name, ps := range props {
			if f, ok := bodyFixtures[name]; ok {
				// A copy: useFixtures writes into the body, and the engines' sweeps run at once.
				x[name] = jsonCopy(f)
				continue
			}
			if _, set := x[name]; !set {
				if f, ok := fx[name]; ok {
					x[name] = f
				} else if f, ok := fx[strings.TrimSuffix(name, "s")]; ok && strings.HasSuffix(name, "_ids") {
					x[name] = []any{f}
				}
			}
			if child, ok := x[name]; ok {
				fillFixtures(child, ps, fx, depth+1)
			}
		}
	case []any:
		if s.Items != nil {
			for _, item := range x {
				fillFixtures(item, s.Items.Value, fx, depth+1)
			}
		}
	}
}

func useFixtures(v any, fx sweepFixtures) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok {
				if f, ok := fx[k]; ok {
					x[k] = f
					continue
				}
				if k == "id" {
					if f, ok := fx["metadata_id"]; ok && s != "" {
						x[k] = f
						continue
					}
				}
			}
			if arr, ok := val.([]any); ok && strings.HasSuffix(k, "_ids") {
				if f, ok := fx[strings.TrimSuffix(k, "s")]; ok {
					for i := range arr {
						if _, isStr := arr[i].(string); isStr {
							arr[i] = f
						}
					}
					continue
				}
			}
			x[k] = useFixtures(val, fx)
		}
	case []any:
		for i := range x {
			x[i] = useFixtures(x[i], fx)
		}
	}
	return v
}

// sample is a valid-looking value of s: its example, default or first enum value, else one of
// its type with the required members filled.
func sample(s *openapi3.Schema, depth int) any {
	if s == nil || depth > 6 {
		return nil
	}
	switch {
	case s.Example != nil:
		return s.Example
	case s.Default != nil:
		return s.Default
	case len(s.Enum) > 0:
		return s.Enum[0]
	}
	for _, ref := range s.OneOf {
		return sample(ref.Value, depth+1)
	}
	for _, ref := range s.AnyOf {
		return sample(ref.Value, depth+1)
	}
	switch schemaType(s) {
	case openapi3.TypeString:
		if s.Format == "uuid" {
			return uuid.NewString()
		}
		return "sweep"
	case openapi3.TypeInteger:
		if s.Min != nil {
			return int64(*s.Min)
		}
		return 1
	case openapi3.TypeNumber:
		return 0.5
	case openapi3.TypeBoolean:
		return true
	case openapi3.TypeArray:
		if s.Items != nil {
			return []any{sample(s.Items.Value, depth+1)}
		}
		return []any{}
	}
	props, required := schemaProps(s)
	obj := map[string]any{}
	for _, name := range required {
		if ps := props[name]; ps != nil {
			obj[name] = sample(ps, depth+1)
		}
	}
	return obj
}

// schemaType is s's type, looking through allOf.
func schemaType(s *openapi3.Schema) string {
	if s.Type != nil && len(*s.Type) > 0 {
		return (*s.Type)[0]
	}
	for _, ref := range s.AllOf {
		if t := schemaType(ref.Value); t != "" {
			return t
		}
	}
	if len(s.Properties) > 0 {
		return openapi3.TypeObject
	}
	return ""
}

// schemaProps merges the properties and required members of s and its allOf.
func schemaProps(s *openapi3.Schema) (map[string]*openapi3.Schema, []string) {
	props := map[string]*openapi3.Schema{}
	required := append([]string(nil), s.Required...)
	for name, ref := range s.Properties {
		props[name] = ref.Value
	}
	for _, ref := range s.AllOf {
		p, r := schemaProps(ref.Value)
		for k, v := range p {
			if _, ok := props[k]; !ok {
				props[k] = v
			}
		}
		required = append(required, r...)
	}
	return props, required
}

// enumOf is s's enum, looking through allOf.
func enumOf(s *openapi3.Schema) []any {
	if len(s.Enum) > 0 {
		return s.Enum
	}
	for _, ref := range s.AllOf {
		if e := enumOf(ref.Value); len(e) > 0 {
			return e
		}
	}
	return nil
}

// raw is a JSON literal that Go values cannot carry (numbers past int64 and float64, lone
// surrogates), written verbatim into a body.
type raw = json.RawMessage

// badValues are the wrong, extreme or edge values for a member of schema s.
func badValues(s *openapi3.Schema) []any {
	// Words, not one run of letters: the length is what is probed here, and the tokenizer's
	// cost on a run without spaces grows with its square (a separate issue).
	long := strings.Repeat("long é ", sweepLong/7)
	var out []any
	switch schemaType(s) {
	case openapi3.TypeString:
		out = []any{12345, "", long, nil, true, map[string]any{"a": 1}, []any{"x"}, raw(`"\ud800"`), "\u0000"}
		if len(enumOf(s)) > 0 {
			out = append([]any{"not-in-the-enum"}, out...)
		}
		if s.Format == "uuid" {
			out = append([]any{"not-a-uuid", uuid.NewString()}, out...)
		}
	case openapi3.TypeInteger:
		out = []any{"x", raw(`9223372036854775808`), -1, 1.5, raw(`1e400`), 0, raw(`9223372036854775807`),
			raw(`-9223372036854775809`), nil, true, "1", raw(`99999999999999999999999999`), math.MaxInt32 + 1}
	case openapi3.TypeNumber:
		out = []any{"x", raw(`1e400`), -1, nil, raw(`-1e400`), 1e308, true, raw(`123456789012345678901234567890`)}
	case openapi3.TypeBoolean:
		out = []any{"true", 1, nil, "x", []any{true}}
	case openapi3.TypeArray:
		out = []any{map[string]any{}, "x", nil, []any{nil}, []any{[]any{}}, []any{long}, make([]any, 5000), []any{raw(`1e400`)}}
	default: // objects and untyped members
		out = []any{[]any{}, "x", nil, 1, map[string]any{"": map[string]any{"": []any{}}}}
	}
	return out
}

type mutation struct {
	path []string
	val  any
}

// jsonMutations spoils one member of body at a time: top-level members, members of nested
// objects, and members of the first item of arrays of objects, with badValues of their schema.
func jsonMutations(base sweepProbe, s *openapi3.Schema, body any, limit int) []sweepProbe {
	var perPath [][]mutation
	var walk func(s *openapi3.Schema, path []string, depth int)
	walk = func(s *openapi3.Schema, path []string, depth int) {
		props, _ := schemaProps(s)
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			ps := props[n]
			p := append(append([]string(nil), path...), n)
			var ms []mutation
			for _, v := range badValues(ps) {
				ms = append(ms, mutation{p, v})
			}
			perPath = append(perPath, ms)
			if depth >= 2 {
				continue
			}
			switch schemaType(ps) {
			case openapi3.TypeObject:
				walk(ps, p, depth+1)
			case openapi3.TypeArray:
				if ps.Items != nil && schemaType(ps.Items.Value) == openapi3.TypeObject {
					walk(ps.Items.Value, append(p, "0"), depth+1)
				}
			}
		}
	}
	walk(s, nil, 0)
	var out []sweepProbe
	for round := 0; len(out) < limit; round++ {
		added := false
		for _, ms := range perPath {
			if round < len(ms) && len(out) < limit {
				m := ms[round]
				pr := base
				pr.what = fmt.Sprintf("body %s=%.40s", strings.Join(m.path, "."), mustMarshal(m.val))
				pr.body = mustMarshal(setAt(body, m.path, m.val, s))
				out = append(out, pr)
				added = true
			}
		}
		if !added {
			break
		}
	}
	return out
}

// setAt returns a copy of doc with the member at path set to v, creating the objects and first
// array items on the way from the schema.
func setAt(doc any, path []string, v any, s *openapi3.Schema) any {
	var cp any
	_ = json.Unmarshal(mustMarshal(doc), &cp)
	if len(path) == 0 {
		return v
	}
	switch x := cp.(type) {
	case map[string]any:
		props, _ := schemaProps(s)
		child := x[path[0]]
		ps := props[path[0]]
		if len(path) > 1 {
			if _, isObj := child.(map[string]any); !isObj {
				if _, isArr := child.([]any); !isArr {
					child = sample(ps, 0)
				}
			}
		}
		x[path[0]] = setAt(child, path[1:], v, ps)
		return x
	case []any:
		var item *openapi3.Schema
		if s != nil && s.Items != nil {
			item = s.Items.Value
		}
		if len(x) == 0 {
			x = append(x, sample(item, 0))
		}
		if _, isObj := x[0].(map[string]any); !isObj {
			x[0] = sample(item, 0)
		}
		x[0] = setAt(x[0], path[1:], v, item)
		return x
	}
	return cp
}

// wholeBodyMutations break the body as a whole: its syntax, its top-level type, duplicate and
// case-folded keys, nesting depth and content type.
func wholeBodyMutations(base sweepProbe, body any) []sweepProbe {
	b := base.body
	var out []sweepProbe
	add := func(what, ct string, body []byte) {
		pr := base
		pr.what, pr.ct, pr.body = what, ct, body
		out = append(out, pr)
	}
	add("invalid JSON", "application/json", []byte(`{"`))
	add("truncated JSON", "application/json", b[:len(b)-1])
	add("empty body", "application/json", []byte{})
	add("null body", "application/json", []byte("null"))
	add("array body", "application/json", []byte("[]"))
	add("string body", "application/json", []byte(`"x"`))
	add("trailing data", "application/json", append(append([]byte(nil), b...), []byte(` {"x":1}`)...))
	add("BOM", "application/json", append([]byte("\xef\xbb\xbf"), b...))
	add("invalid UTF-8", "application/json", []byte("{\"x\":\"\xff\xfe\"}"))
	add("deep nesting", "application/json", []byte(`{"x":`+strings.Repeat("[", 20000)+strings.Repeat("]", 20000)+`}`))
	add("text/plain", "text/plain", b)
	add("no content type", "", b)
	add("form content type", "application/x-www-form-urlencoded", []byte("a=b"))
	add("multipart to a JSON operation", "multipart/form-data; boundary=x", []byte("--x--\r\n"))
	add("json with charset", "application/json; charset=utf-8", b)
	if obj, ok := body.(map[string]any); ok && len(obj) > 0 {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			first, _ := json.Marshal(k)
			// The first copy wrong-typed, the second valid: a validator that keeps the last and
			// a decoder that keeps the first would disagree.
			add("duplicate key "+k, "application/json", append([]byte(`{`+string(first)+`:[5],`), b[1:]...))
			upper, _ := json.Marshal(strings.ToUpper(k))
			add("case-folded key "+k, "application/json", append(b[:len(b)-1:len(b)-1], []byte(`,`+string(upper)+`:""}`)...))
			if inner, ok := obj[k].(map[string]any); ok && len(inner) > 0 {
				nested := map[string]any{}
				for kk, vv := range obj {
					nested[kk] = vv
				}
				nb := mustMarshal(nested)
				// Duplicate the nested object's first key inside it.
				innerKeys := make([]string, 0, len(inner))
				for ik := range inner {
					innerKeys = append(innerKeys, ik)
				}
				slices.Sort(innerKeys)
				ik, _ := json.Marshal(innerKeys[0])
				marker := []byte(string(first) + `:{`)
				if i := bytes.Index(nb, marker); i >= 0 {
					j := i + len(marker)
					dup := append(append(append([]byte(nil), nb[:j]...), []byte(string(ik)+`:[5],`)...), nb[j:]...)
					add("nested duplicate key "+k+"."+innerKeys[0], "application/json", dup)
				}
			}
		}
	}
	return out
}

// paramMutations are the bad values of a path or query parameter.
func paramMutations(prm *openapi3.Parameter) []string {
	if prm.In == openapi3.ParameterInPath {
		return []string{"not-a-uuid", uuid.NewString(), uuid.Nil.String(), strings.Repeat("a", 4096), "a/b", "%", "é ü", "..", "\x00", "\xff"}
	}
	if prm.In != openapi3.ParameterInQuery {
		return nil
	}
	var s *openapi3.Schema
	if prm.Schema != nil {
		s = prm.Schema.Value
	}
	if s == nil {
		return []string{"x"}
	}
	switch schemaType(s) {
	case openapi3.TypeInteger, openapi3.TypeNumber:
		return []string{"x", "9223372036854775807", "9223372036854775808", "-1", "0", "1.5", "99999999999999999999",
			"-9223372036854775808", "1e3", " 1", "0x10", "NaN"}
	case openapi3.TypeBoolean:
		return []string{"maybe", "2", "TRUE"}
	case openapi3.TypeArray:
		return []string{"x", strings.Repeat("x,", 2000), "not-a-uuid"}
	}
	out := []string{strings.Repeat("q", 8000), "\x00", "\xff", "not-a-uuid", "%"}
	if len(enumOf(s)) > 0 {
		out = append(out, "not-in-the-enum")
	}
	return out
}

// multipartBaseline is a form with a small text file and, for the document operations, a `data`
// part (its JSON is data when given, else the baseline of DocumentProcessConfig).
func (o sweepOp) multipartBaseline(fx sweepFixtures, data []byte) (string, []byte) {
	props, _ := schemaProps(o.op.RequestBody.Value.Content.Get("multipart/form-data").Schema.Value)
	var parts []part
	if _, ok := props["data"]; ok {
		if data == nil {
			data = mustMarshal(dataBaseline())
		}
		parts = append(parts, part{field: "data", data: data})
	}
	if _, ok := props["user"]; ok {
		parts = append(parts, part{field: "user", data: []byte(fx["user"])})
	}
	if o.id == "audioToText" {
		parts = append(parts, part{field: "file", filename: "sweep.mp3", contentType: "audio/mpeg", data: []byte("Sweep speech.")})
	} else {
		parts = append(parts, part{field: "file", filename: "sweep-upload.txt", contentType: "text/plain",
			data: []byte("Sweep text.\nAnother line.\n\nA second paragraph.")})
	}
	r, ct := formBody(parts...)
	return ct, r
}

// dataBaseline is the document configuration the form baselines carry: the fixture's.
func dataBaseline() map[string]any {
	rule, _ := json.Marshal(sweepHierarchicalRule())
	var pr any
	_ = json.Unmarshal(rule, &pr)
	return map[string]any{"indexing_technique": "high_quality", "doc_form": "hierarchical_model", "process_rule": pr}
}

// multipartMutations break the form itself and, through its `data` part, every member of the
// document configuration.
func (o sweepOp) multipartMutations(c *contract, fx sweepFixtures, base sweepProbe) []sweepProbe {
	var out []sweepProbe
	add := func(what, ct string, body []byte) {
		pr := base
		pr.what, pr.ct, pr.body = what, ct, body
		out = append(out, pr)
	}
	boundary := base.ct[strings.Index(base.ct, "boundary=")+len("boundary="):]
	add("multipart without boundary", "multipart/form-data", base.body)
	add("multipart with an empty boundary", "multipart/form-data; boundary=", base.body)
	add("multipart garbage", base.ct, []byte("this is not a multipart body"))
	add("multipart truncated", base.ct, base.body[:len(base.body)/2])
	add("multipart without parts", base.ct, []byte("--"+boundary+"--\r\n"))
	add("multipart empty body", base.ct, []byte{})
	add("multipart/mixed", strings.Replace(base.ct, "form-data", "mixed", 1), base.body)
	add("JSON to a multipart operation", "application/json", []byte(`{}`))
	add("no content type", "", base.body)
	twoFiles, ct2 := formBody(part{field: "file", filename: "a.txt", data: []byte("a")}, part{field: "file", filename: "b.txt", data: []byte("b")})
	add("two files", ct2, twoFiles)
	noName, ct3 := formBody(part{field: "file", emptyName: true, data: []byte("a")})
	add("file without a name", ct3, noName)
	for _, name := range []string{strings.Repeat("n", 5000) + ".txt", "../../etc/passwd", "x\x01y.txt", "x\x00y.txt", "\xff.txt", ".txt", "no-extension"} {
		b, ct := formBody(part{field: "file", filename: name, data: []byte("a")})
		add(fmt.Sprintf("file named %.20q", name), ct, b)
	}
	longUser, ct4 := formBody(part{field: "user", data: []byte(strings.Repeat("u", 4000))}, part{field: "file", filename: "a.txt", data: []byte("a")})
	add("long user field", ct4, longUser)
	for _, user := range []string{"", "a\x00b", "\xff"} {
		b, ct := formBody(part{field: "user", data: []byte(user)}, part{field: "data", data: []byte(user)},
			part{field: "file", filename: "a.txt", data: []byte("a")})
		add(fmt.Sprintf("text fields %q", user), ct, b)
	}

	props, _ := schemaProps(o.op.RequestBody.Value.Content.Get("multipart/form-data").Schema.Value)
	if _, ok := props["data"]; !ok {
		return out
	}
	for _, d := range []string{"", "{", "null", "[]", `"x"`, "5", `{"a":1}{"b":2}`, `{"indexing_technique":"economy","indexing_technique":5}`} {
		ct, b := o.multipartBaseline(fx, []byte(d))
		add(fmt.Sprintf("data %.20q", d), ct, b)
	}
	cfg := c.doc.Components.Schemas["DocumentProcessConfig"].Value
	dataBase := dataBaseline()
	for _, m := range jsonMutations(sweepProbe{}, cfg, dataBase, sweepBodyCap/2) {
		ct, b := o.multipartBaseline(fx, m.body)
		add("data "+m.what, ct, b)
	}
	return out
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("sweep: marshal %T: %v", v, err))
	}
	return b
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
