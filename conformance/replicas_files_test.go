package conformance

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// filesReplica starts another server on p's database with a data directory of its own, as a
// second machine would run it, and the same keys as p.
func filesReplica(t *testing.T, p *Parley, extraEnv ...string) *Parley {
	t.Helper()
	r := &Parley{engine: p.engine, logs: &syncBuffer{}, AppKey: p.AppKey, KnowledgeKey: p.KnowledgeKey}
	dataDir := t.TempDir()
	for _, kv := range p.env {
		if strings.HasPrefix(kv, "PARLEY_DATA_DIR=") {
			kv = "PARLEY_DATA_DIR=" + dataDir
		}
		r.env = append(r.env, kv)
	}
	r.engine.DataDir = dataDir
	r.Start(t, extraEnv...)
	return r
}

// postgresPair starts two servers on one fresh PostgreSQL database, with different data
// directories. Tests of what replicas share skip without control of the processes.
func postgresPair(t *testing.T) (a, b *Parley) {
	t.Helper()
	if binary == "" {
		t.Skip("needs to start servers of its own")
	}
	a = startParley(t, storetest.Postgres)
	return a, filesReplica(t, a)
}

// TestReplicasShareFiles runs two servers on one PostgreSQL database, each with its own data
// directory: a file uploaded through one is previewed, downloaded through its signed link and
// used in a chat through the other; a document's source uploaded through one downloads through
// the other; and a document whose server is killed mid-indexing is indexed by the other, which
// reads its source from the database. Nothing is written to either data directory.
func TestReplicasShareFiles(t *testing.T) {
	a, b := postgresPair(t)
	ctx := context.Background()
	hc := newContractClient(t)
	img := pngBytes(t)

	_, up, e := a.upload(t, hc, part{field: "file", filename: "shared.png", contentType: "image/png", data: img},
		part{field: "user", data: []byte("rita")})
	if up.CreatedBy == "" || up.SourceUrl == nil {
		t.Fatalf("upload through A: %+v", e)
	}
	resp, raw := b.getRaw(t, b.AppKey, "/files/"+up.Id.String()+"/preview?user=rita")
	if resp.StatusCode != 200 || !bytes.Equal(raw, img) {
		t.Fatalf("preview through B of a file uploaded through A: %d, %d bytes", resp.StatusCode, len(raw))
	}
	// The link A signed verifies on B.
	resp, raw = b.getRaw(t, "", relLink(t, *up.SourceUrl))
	if resp.StatusCode != 200 || !bytes.Equal(raw, img) {
		t.Fatalf("A's signed link on B: %d %s", resp.StatusCode, raw)
	}

	// A chat through B sends the image uploaded through A to the model.
	q := marker(t, "what is in the shared picture")
	upstream.On(q, openaitest.Reply{Text: "A red dot."})
	body := chatBody(q, "rita", false)
	upID := up.Id.String()
	body.Files = &[]client.FileReference{{Type: client.Image, TransferMethod: client.FileReferenceTransferMethodLocalFile, UploadFileId: &upID}}
	seenBefore := len(upstream.Requests())
	r, err := newClient(t, b, b.AppKey).SendChatMessageWithResponse(ctx, nil, body)
	if err != nil || r.JSON200 == nil {
		t.Fatalf("chat through B with A's upload: %v %s", err, r.Body)
	}
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(img)
	seen := false
	for _, req := range upstream.Requests()[seenBefore:] {
		if req.LastUserMessage() == q {
			for _, part := range req.Messages[len(req.Messages)-1].Parts {
				seen = seen || part.ImageURL == want
			}
		}
	}
	if !seen {
		t.Fatal("the model did not get the image uploaded through the other server")
	}

	// A document's source, uploaded through A, downloads through B.
	ka, kb := newClient(t, a, a.KnowledgeKey), newClient(t, b, b.KnowledgeKey)
	ds := kdDataset(t, ka, "replicas", "economy")
	notes := []byte("# Shared\n\nThe source of this document is kept in the database.")
	doc := kdCreateFile(t, ka, ds, "notes.md", notes, `{"process_rule":{"mode":"automatic"}}`)
	resp, raw = b.getRaw(t, b.KnowledgeKey, "/datasets/"+ds+"/documents/"+doc.Document.Id.String()+"/download")
	var dl client.DocumentDownload
	if resp.StatusCode != 200 || json.Unmarshal(raw, &dl) != nil {
		t.Fatalf("download through B: %d %s", resp.StatusCode, raw)
	}
	if resp, raw = b.getRaw(t, "", relLink(t, dl.Url)); resp.StatusCode != 200 || !bytes.Equal(raw, notes) {
		t.Fatalf("document source through B: %d %q", resp.StatusCode, raw)
	}
	kdCompleted(t, kb, ds, doc.Batch)

	// A large document whose server dies while indexing it: B, restarted, resumes it, reading
	// the source that A received.
	large := kdCreateFile(t, ka, ds, "large.txt", kdLargeText(4<<20), automaticRule)
	kdIndexing(t, ka, ds, large.Batch)
	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	b.Restart(t)
	kb = newClient(t, b, b.KnowledgeKey)
	kdCompleted(t, kb, ds, large.Batch)

	// Files live in the database: neither data directory holds any.
	for name, p := range map[string]*Parley{"A": a, "B": b} {
		if entries, err := os.ReadDir(filepath.Join(p.engine.DataDir, "files")); err == nil && len(entries) > 0 {
			t.Errorf("server %s keeps files in its data directory: %v", name, entries)
		}
	}
}

// TestReplicasServeRuntimeChanges: what the CLI changes in the database while two servers run
// (an app imported, then published, a key created, then revoked, an app deleted) is served by
// the server that did not take part on its next request.
func TestReplicasServeRuntimeChanges(t *testing.T) {
	a, b := postgresPair(t)
	ctx := context.Background()
	name := "Replicated Flow"
	if got := a.CLI(t, "apps", "import", chatflowDSL(t, name)); got != name {
		t.Fatalf("import printed %q", got)
	}
	key := a.CLI(t, "keys", "create", "--app", name)
	cb := newClient(t, b, key)
	q := marker(t, "replicated question")
	body := client.SendChatMessageJSONRequestBody{Query: q, User: "u1", Inputs: map[string]any{"name": "Ada"}}
	r, err := cb.SendChatMessageWithResponse(ctx, nil, body)
	if err != nil {
		t.Fatal(err)
	}
	segErr(t, "unpublished, on B", r.StatusCode(), r.Body, 400, "invalid_param", "Workflow not published")

	a.CLI(t, "apps", "publish", name)
	upstream.On(q, openaitest.Reply{Text: "Served by the other replica."})
	r, err = cb.SendChatMessageWithResponse(ctx, nil, body)
	if err != nil || r.JSON200 == nil || !strings.Contains(r.JSON200.Answer, "Served by the other replica.") {
		t.Fatalf("published through the CLI, chat on B: %v %d %s", err, r.StatusCode(), r.Body)
	}

	// A second key works on B at once; revoked, it stops at once.
	second := a.CLI(t, "keys", "create", "--app", name)
	c2 := newClient(t, b, second)
	if info, err := c2.GetAppInfoWithResponse(ctx, &client.GetAppInfoParams{}); err != nil || info.JSON200 == nil || info.JSON200.Name != name {
		t.Fatalf("new key on B: %v %s", err, info.Body)
	}
	var id string
	for _, line := range strings.Split(a.CLI(t, "keys", "list"), "\n") {
		fields := strings.Fields(line)
		for _, f := range fields {
			if prefix, ok := strings.CutSuffix(f, "…"); ok && strings.HasPrefix(second, prefix) {
				id = fields[0]
			}
		}
	}
	if id == "" {
		t.Fatal("the new key is not listed")
	}
	a.CLI(t, "keys", "revoke", id)
	if info, _ := c2.GetAppInfoWithResponse(ctx, &client.GetAppInfoParams{}); info.StatusCode() != http.StatusUnauthorized {
		t.Fatalf("revoked key on B: %d %s", info.StatusCode(), info.Body)
	}

	// Deleted through the CLI: B no longer serves it.
	a.CLI(t, "apps", "delete", name)
	if r, _ := cb.SendChatMessageWithResponse(ctx, nil, body); r.StatusCode() != http.StatusUnauthorized {
		t.Fatalf("deleted app on B: %d %s", r.StatusCode(), r.Body)
	}
}

// TestReplicasLegacyFilesMigrate: on a PostgreSQL deployment from before files moved into the
// database, the files of a data directory stay readable by its own server (read as a fallback)
// but not by another, until `parley files migrate` copies them into the database; it is safe to
// run again.
func TestReplicasLegacyFilesMigrate(t *testing.T) {
	if binary == "" {
		t.Skip("needs to start servers of its own")
	}
	a := startParley(t, storetest.Postgres)
	legacyDir := filepath.Join(a.engine.DataDir, "files")
	// Keeping files in <data dir>/files is what earlier versions did on PostgreSQL.
	a.Restart(t, "PARLEY_FILES_DIR="+legacyDir)
	hc := newContractClient(t)
	img := pngBytes(t)
	_, up, e := a.upload(t, hc, part{field: "file", filename: "old.png", contentType: "image/png", data: img},
		part{field: "user", data: []byte("olga")})
	if up.CreatedBy == "" {
		t.Fatalf("upload: %+v", e)
	}
	preview := "/files/" + up.Id.String() + "/preview?user=olga"
	a.Restart(t) // upgraded: files go to the database now
	if !strings.Contains(a.logs.String(), "parley files migrate") {
		t.Error("the server did not warn about the files left in its data directory")
	}
	if resp, raw := a.getRaw(t, a.AppKey, preview); resp.StatusCode != 200 || !bytes.Equal(raw, img) {
		t.Fatalf("an old file on its own server: %d %s", resp.StatusCode, raw)
	}
	b := filesReplica(t, a)
	if resp, _ := b.getRaw(t, b.AppKey, preview); resp.StatusCode != 404 {
		t.Fatalf("an old file on another server before the migration: %d, want 404", resp.StatusCode)
	}
	if out := a.CLI(t, "files", "migrate"); !strings.HasPrefix(out, "copied 1 files") {
		t.Fatalf("files migrate: %q", out)
	}
	if resp, raw := b.getRaw(t, b.AppKey, preview); resp.StatusCode != 200 || !bytes.Equal(raw, img) {
		t.Fatalf("an old file on another server after the migration: %d %s", resp.StatusCode, raw)
	}
	if out := a.CLI(t, "files", "migrate"); !strings.Contains(out, "copied 0 files") || !strings.Contains(out, "1 were there already") {
		t.Fatalf("files migrate again: %q", out)
	}
}
