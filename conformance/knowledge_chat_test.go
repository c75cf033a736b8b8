package conformance

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// TestKnowledgeChat asks the librarian app, which retrieves from the seeded `handbook`
// knowledge base, a question its new document answers: the chunk goes into the system prompt,
// comes back as a retriever resource in blocking metadata, message_end and the history, and
// its hit count goes up.
func TestKnowledgeChat(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		kc := newClient(t, p, p.KnowledgeKey)
		ds := datasetByName(t, kc, "handbook")
		doc := indexText(t, kc, ds, client.CreateDocumentByTextJSONRequestBody{Name: "staff handbook", Text: handbookText,
			IndexingTechnique: ptr(client.HighQuality), ProcessRule: paragraphRule()})
		segs := listSegments(t, kc, ds, doc, nil)
		if len(segs.Data) != 4 {
			t.Fatalf("handbook chunks: %+v", segs)
		}
		vacation := segs.Data[0]
		docName := ""
		if r, err := kc.GetDocumentWithResponse(ctx, ds, doc, nil); err == nil && r.StatusCode() == 200 {
			var d struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(r.Body, &d)
			docName = d.Name
		}

		c := newClient(t, p, p.CLI(t, "keys", "create", "--app", "librarian"))
		q := marker(t, "how many days of paid vacation does every employee receive")
		upstream.On(q, openaitest.Reply{Text: "Twenty days."})

		// check checks the cited chunks of one answer; the vacation chunk comes first and has
		// been hit hits times.
		check := func(what string, rs []client.RetrieverResource, msgID uuid.UUID, hits int) {
			t.Helper()
			if len(rs) == 0 {
				t.Fatalf("%s: no retriever_resources", what)
			}
			for i, r := range rs {
				if r.Position != i+1 || r.Id == nil || *r.Id == uuid.Nil || r.MessageId == nil || *r.MessageId != msgID ||
					r.DatasetId.String() != ds || r.DatasetName != "handbook" || r.DocumentId.String() != doc ||
					(docName != "" && r.DocumentName != docName) || r.DocumentName == "" ||
					r.DataSourceType == nil || *r.DataSourceType != "upload_file" || r.SegmentPosition == nil ||
					r.IndexNodeHash == nil || *r.IndexNodeHash == "" || r.Content == "" || r.Score <= 0 ||
					r.HitCount == nil || *r.HitCount < 1 || r.WordCount == nil || *r.WordCount != len([]rune(r.Content)) ||
					r.CreatedAt == nil || *r.CreatedAt < time.Now().Add(-time.Minute).Unix() || *r.CreatedAt > time.Now().Unix()+1 {
					t.Errorf("%s: resource %d: %s", what, i, mustJSON(r))
				}
			}
			top := rs[0]
			if top.SegmentId != vacation.Id || *top.SegmentPosition != vacation.Position || top.Content != vacation.Content ||
				*top.IndexNodeHash != vacation.IndexNodeHash || *top.HitCount != hits || *top.WordCount != vacation.WordCount {
				t.Errorf("%s: top resource %s, want the vacation chunk (hit %d times)", what, mustJSON(top), hits)
			}
		}
		systemPrompt := func(what string) {
			t.Helper()
			for _, r := range upstream.Requests() {
				if !strings.HasSuffix(r.Path, "/chat/completions") || r.LastUserMessage() != q {
					continue
				}
				if len(r.Messages) == 0 || r.Messages[0].Role != providers.RoleSystem {
					t.Fatalf("%s: no system message: %+v", what, r.Messages)
				}
				sys := r.Messages[0].Content
				if !strings.Contains(sys, "<context>\n"+vacation.Content) || !strings.Contains(sys, "You answer from the handbook.") {
					t.Errorf("%s: system prompt lacks the chunk: %q", what, sys)
				}
				return
			}
			t.Fatalf("%s: no upstream chat request for the query", what)
		}
		hitCount := func() int { return getSegment(t, kc, ds, doc, vacation.Id.String()).HitCount }

		// Blocking.
		mode := client.Blocking
		resp, err := c.SendChatMessageWithResponse(ctx, nil, client.SendChatMessageJSONRequestBody{Query: q, User: "reader", Inputs: map[string]any{}, ResponseMode: &mode})
		if err != nil {
			t.Fatal(err)
		}
		if resp.JSON200 == nil {
			t.Fatalf("blocking: status %d, body %s", resp.StatusCode(), resp.Body)
		}
		if resp.JSON200.Answer != "Twenty days." {
			t.Fatalf("answer %q", resp.JSON200.Answer)
		}
		blocking := resp.JSON200.Metadata.RetrieverResources
		check("blocking", blocking, resp.JSON200.MessageId, 1)
		systemPrompt("blocking")
		if n := hitCount(); n != 1 {
			t.Errorf("hit_count after one answer: %d", n)
		}

		// The history lists the same resources.
		hist, err := c.ListMessagesWithResponse(ctx, &client.ListMessagesParams{ConversationId: resp.JSON200.ConversationId.String(), User: ptr("reader")})
		if err != nil {
			t.Fatal(err)
		}
		if hist.JSON200 == nil || len(hist.JSON200.Data) != 1 {
			t.Fatalf("history: status %d, body %s", hist.StatusCode(), hist.Body)
		}
		if got, want := mustJSON(hist.JSON200.Data[0].RetrieverResources), mustJSON(blocking); got != want {
			t.Errorf("history retriever_resources\n got %s\nwant %s", got, want)
		}

		// Streaming: message_end carries them.
		body := client.SendChatMessageJSONRequestBody{Query: q, User: "reader", Inputs: map[string]any{}, ResponseMode: ptr(client.Streaming)}
		var end *client.MessageEndEvent
		for _, ev := range streamEvents(t, c, body) {
			if eventName(t, ev) == "message_end" {
				m, err := ev.AsMessageEndEvent()
				if err != nil {
					t.Fatal(err)
				}
				end = &m
			}
		}
		if end == nil || end.Metadata.RetrieverResources == nil {
			t.Fatalf("no message_end with retriever_resources")
		}
		check("message_end", *end.Metadata.RetrieverResources, end.MessageId, 2)
		if n := hitCount(); n != 2 {
			t.Errorf("hit_count after two answers: %d", n)
		}
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
