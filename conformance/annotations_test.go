package conformance

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// waitJob polls an annotation-reply job until it is over and returns its final status.
func waitJob(t *testing.T, c *client.ClientWithResponses, action client.GetAnnotationReplyStatusParamsAction, id string) client.AnnotationReplyJobStatus {
	t.Helper()
	var last client.AnnotationReplyJobStatus
	eventually(t, "annotation job "+id, func() (bool, any) {
		r, err := c.GetAnnotationReplyStatusWithResponse(context.Background(), action, id)
		if err != nil || r.JSON200 == nil {
			t.Fatalf("job status: %v %s", err, r.Body)
		}
		last = *r.JSON200
		return last.JobStatus == client.AnnotationReplyJobStatusJobStatusCompleted || last.JobStatus == client.AnnotationReplyJobStatusJobStatusError, last
	})
	return last
}

// TestAnnotations drives the annotation operations and annotation reply: CRUD with Dify's codes,
// the switch-on job (embedding every annotation), a chat answered from a matching annotation
// without a model call — streamed and blocking, with annotation_reply in the metadata and the hit
// counted — a question that does not match answered by the model, and switching off.
func TestAnnotations(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		c := newClient(t, p, p.AppKey)

		// Create, list (keyword, case ignored), update; bad ids and bodies.
		mark := marker(t, "refund")
		created, err := c.CreateAnnotationWithResponse(ctx, client.AnnotationRequest{
			Question: "How do I get a refund for order " + mark + "?", Answer: "Write to refunds@example.test within 30 days."})
		if err != nil || created.JSON201 == nil {
			t.Fatalf("create: %v %s", err, created.Body)
		}
		a := *created.JSON201
		if a.HitCount != 0 || a.Id == "" {
			t.Fatalf("created %+v", a)
		}
		other, _ := c.CreateAnnotationWithResponse(ctx, client.AnnotationRequest{Question: "Opening hours?", Answer: "Nine to five."})
		if other.JSON201 == nil {
			t.Fatalf("create: %s", other.Body)
		}
		kw := strings.ToUpper(mark)
		list, err := c.ListAnnotationsWithResponse(ctx, &client.ListAnnotationsParams{Keyword: &kw, Limit: ptr(500)})
		if err != nil || list.JSON200 == nil {
			t.Fatalf("list: %v %s", err, list.Body)
		}
		if l := list.JSON200; l.Total != 1 || len(l.Data) != 1 || l.Data[0].Id != a.Id || l.Limit != 100 || l.Page != 1 || l.HasMore {
			t.Fatalf("keyword list = %+v", l)
		}
		all, _ := c.ListAnnotationsWithResponse(ctx, &client.ListAnnotationsParams{Limit: ptr(1)})
		if l := all.JSON200; l == nil || l.Total != 2 || len(l.Data) != 1 || !l.HasMore || l.Data[0].Id != other.JSON201.Id {
			t.Fatalf("page of one = %s", all.Body)
		}
		if st, body := rawCall(t, p, http.MethodPut, "/apps/annotations/no-such-annotation", `{"question":"q","answer":"a"}`, p.AppKey); st != 404 || !strings.Contains(string(body), `"not_found"`) {
			t.Fatalf("update unknown = %d %s", st, body)
		}
		if st, body := rawCall(t, p, http.MethodDelete, "/apps/annotations/no-such-annotation", "", p.AppKey); st != 404 || !strings.Contains(string(body), `"not_found"`) {
			t.Fatalf("delete unknown = %d %s", st, body)
		}
		if st, body := rawCall(t, p, http.MethodPost, "/apps/annotations", `{"question":"only a question"}`, p.AppKey); st != 400 || !strings.Contains(string(body), `"invalid_param"`) {
			t.Fatalf("create without answer = %d %s", st, body)
		}
		// Another app's annotation is not this app's.
		otherKey := p.CLI(t, "keys", "create", "--app", "speaker")
		if st, _ := rawCall(t, p, http.MethodDelete, "/apps/annotations/"+a.Id, "", otherKey); st != 404 {
			t.Fatalf("delete through another app = %d", st)
		}

		// Job errors: unknown job, wrong action, unknown action.
		if st, body := rawCall(t, p, http.MethodGet, "/apps/annotation-reply/enable/status/no-such-job", "", p.AppKey); st != 400 || !strings.Contains(string(body), "The job does not exist.") {
			t.Fatalf("unknown job = %d %s", st, body)
		}
		if st, body := rawCall(t, p, http.MethodPost, "/apps/annotation-reply/toggle", `{"embedding_provider_name":"openai","embedding_model_name":"text-embedding-3-small","score_threshold":0.9}`, p.AppKey); st != 400 || !strings.Contains(string(body), `"invalid_param"`) {
			t.Fatalf("unknown action = %d %s", st, body)
		}
		// Disabling what is not on completes and changes nothing.
		dis, err := c.SetAnnotationReplyWithResponse(ctx, client.SetAnnotationReplyParamsActionDisable, client.AnnotationReplyRequest{
			EmbeddingProviderName: "openai", EmbeddingModelName: "text-embedding-3-small", ScoreThreshold: 0.9})
		if err != nil || dis.JSON200 == nil {
			t.Fatalf("disable: %v %s", err, dis.Body)
		}
		if st := waitJob(t, c, client.GetAnnotationReplyStatusParamsActionDisable, dis.JSON200.JobId); st.JobStatus != client.AnnotationReplyJobStatusJobStatusCompleted {
			t.Fatalf("disable when off = %+v", st)
		}
		if st, _ := rawCall(t, p, http.MethodGet, "/apps/annotation-reply/enable/status/"+dis.JSON200.JobId, "", p.AppKey); st != 400 {
			t.Fatalf("a disable job read as an enable job = %d", st)
		}
		// A model that is not configured ends the job in error, with the reason.
		bad, _ := c.SetAnnotationReplyWithResponse(ctx, client.SetAnnotationReplyParamsActionEnable, client.AnnotationReplyRequest{
			EmbeddingProviderName: "openai", EmbeddingModelName: "no-such-embedder", ScoreThreshold: 0.9})
		if bad.JSON200 == nil || bad.JSON200.JobStatus != client.AnnotationReplyJobJobStatusWaiting {
			t.Fatalf("enable with an unknown model: %s", bad.Body)
		}
		if st := waitJob(t, c, client.GetAnnotationReplyStatusParamsActionEnable, bad.JSON200.JobId); st.JobStatus != client.AnnotationReplyJobStatusJobStatusError || !strings.Contains(st.ErrorMsg, "no-such-embedder") {
			t.Fatalf("enable with an unknown model = %+v", st)
		}

		// Switch on; parameters say so.
		en, _ := c.SetAnnotationReplyWithResponse(ctx, client.SetAnnotationReplyParamsActionEnable, client.AnnotationReplyRequest{
			EmbeddingProviderName: "openai", EmbeddingModelName: "text-embedding-3-small", ScoreThreshold: 0.8})
		if en.JSON200 == nil {
			t.Fatalf("enable: %s", en.Body)
		}
		if st := waitJob(t, c, client.GetAnnotationReplyStatusParamsActionEnable, en.JSON200.JobId); st.JobStatus != client.AnnotationReplyJobStatusJobStatusCompleted || st.ErrorMsg != "" {
			t.Fatalf("enable = %+v", st)
		}
		params, _ := c.GetAppParametersWithResponse(ctx, nil)
		if params.JSON200 == nil || !params.JSON200.AnnotationReply.Enabled {
			t.Fatalf("parameters after enable: %s", params.Body)
		}

		// The annotation's own question matches (cosine 1): answered from it, no model call.
		calls := len(upstream.Requests())
		modelMark := marker(t, "never asked")
		upstream.On(mark, openaitest.Reply{Text: "model answer " + modelMark})
		evs := streamEvents(t, c, chatBody(a.Question, "ann-user", true))
		var answer string
		var end *client.MessageEndEvent
		for _, ev := range evs {
			switch eventName(t, ev) {
			case "message":
				m, _ := ev.AsMessageEvent()
				answer += m.Answer
			case "message_end":
				e, _ := ev.AsMessageEndEvent()
				end = &e
			}
		}
		if answer != a.Answer || end == nil || end.Metadata.AnnotationReply == nil || end.Metadata.AnnotationReply.Id != a.Id {
			t.Fatalf("streamed answer %q, end %+v", answer, end)
		}
		if acc := end.Metadata.AnnotationReply.Account; acc == nil || acc.Name == nil || *acc.Name != "Conformance" {
			t.Fatalf("annotation_reply.account = %+v", acc)
		}
		for _, r := range upstream.Requests()[calls:] {
			if strings.HasSuffix(r.Path, "/chat/completions") && strings.Contains(r.LastUserMessage(), mark) {
				t.Fatal("the model was called for a question an annotation answers")
			}
		}
		blocking, err := c.SendChatMessageWithResponse(ctx, nil, chatBody(a.Question, "ann-user", false))
		if err != nil || blocking.JSON200 == nil {
			t.Fatalf("blocking: %v %s", err, blocking.Body)
		}
		if b := blocking.JSON200; b.Answer != a.Answer || b.Metadata.AnnotationReply == nil || b.Metadata.AnnotationReply.Id != a.Id {
			t.Fatalf("blocking reply %s", blocking.Body)
		}
		// Hits are counted.
		list, _ = c.ListAnnotationsWithResponse(ctx, &client.ListAnnotationsParams{Keyword: &mark})
		if l := list.JSON200; l == nil || len(l.Data) != 1 || l.Data[0].HitCount != 2 {
			t.Fatalf("hit count after two answers: %s", list.Body)
		}

		// A question far from every annotation goes to the model.
		far := marker(t, "penguins migrate")
		upstream.On(far, openaitest.Reply{Text: "From the model."})
		resp, _ := c.SendChatMessageWithResponse(ctx, nil, chatBody(far, "ann-user", false))
		if resp.JSON200 == nil || resp.JSON200.Answer != "From the model." || resp.JSON200.Metadata.AnnotationReply != nil {
			t.Fatalf("unmatched question: %s", resp.Body)
		}

		// An annotation created while reply is on answers at once; an updated one with its new text.
		fresh, _ := c.CreateAnnotationWithResponse(ctx, client.AnnotationRequest{Question: "Where is the " + marker(t, "lighthouse") + "?", Answer: "On the cliff."})
		if fresh.JSON201 == nil {
			t.Fatalf("create while on: %s", fresh.Body)
		}
		resp, _ = c.SendChatMessageWithResponse(ctx, nil, chatBody(fresh.JSON201.Question, "ann-user", false))
		if resp.JSON200 == nil || resp.JSON200.Answer != "On the cliff." {
			t.Fatalf("fresh annotation: %s", resp.Body)
		}
		upd, _ := c.UpdateAnnotationWithResponse(ctx, fresh.JSON201.Id, client.AnnotationRequest{Question: fresh.JSON201.Question, Answer: "On the hill."})
		if upd.JSON200 == nil || upd.JSON200.Answer != "On the hill." {
			t.Fatalf("update: %s", upd.Body)
		}
		resp, _ = c.SendChatMessageWithResponse(ctx, nil, chatBody(fresh.JSON201.Question, "ann-user", false))
		if resp.JSON200 == nil || resp.JSON200.Answer != "On the hill." {
			t.Fatalf("updated annotation: %s", resp.Body)
		}

		// Deleted: the model answers again.
		if del, _ := c.DeleteAnnotationWithResponse(ctx, fresh.JSON201.Id); del.StatusCode() != 204 {
			t.Fatalf("delete = %d %s", del.StatusCode(), del.Body)
		}
		resp, _ = c.SendChatMessageWithResponse(ctx, nil, chatBody(fresh.JSON201.Question, "ann-user", false))
		if resp.JSON200 == nil || resp.JSON200.Metadata.AnnotationReply != nil {
			t.Fatalf("deleted annotation still answers: %s", resp.Body)
		}

		// Switch off: the model answers the annotated question.
		off, _ := c.SetAnnotationReplyWithResponse(ctx, client.SetAnnotationReplyParamsActionDisable, client.AnnotationReplyRequest{
			EmbeddingProviderName: "openai", EmbeddingModelName: "text-embedding-3-small", ScoreThreshold: 0.8})
		if st := waitJob(t, c, client.GetAnnotationReplyStatusParamsActionDisable, off.JSON200.JobId); st.JobStatus != client.AnnotationReplyJobStatusJobStatusCompleted {
			t.Fatalf("disable = %+v", st)
		}
		resp, _ = c.SendChatMessageWithResponse(ctx, nil, chatBody(a.Question, "ann-user", false))
		if resp.JSON200 == nil || resp.JSON200.Answer != "model answer "+modelMark || resp.JSON200.Metadata.AnnotationReply != nil {
			t.Fatalf("after disable: %s", resp.Body)
		}
	})
}

// TestAudio drives speech to text and text to speech through the fake upstream's
// /audio/transcriptions and /audio/speech, their refusals with Dify's codes, and an answer read
// aloud while it streams (tts_message events, then tts_message_end after message_end).
func TestAudio(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		key := p.CLI(t, "keys", "create", "--app", "speaker")
		post := func(key string, parts ...part) (int, []byte) {
			resp, raw := rawDo(t, formRequest(t, p.URL+"/audio-to-text", key, parts...))
			return resp.StatusCode, raw
		}
		st, body := post(key, part{field: "file", filename: "hello.mp3", contentType: "audio/mpeg", data: []byte("hello from the microphone")},
			part{field: "user", data: []byte("voice-user")})
		if st != 200 || !strings.Contains(string(body), `"text":"hello from the microphone"`) {
			t.Fatalf("audio-to-text = %d %s", st, body)
		}
		for _, tc := range []struct {
			name   string
			key    string
			parts  []part
			status int
			code   string
		}{
			{"no file", key, []part{{field: "user", data: []byte("u")}}, 400, "no_audio_uploaded"},
			{"not audio", key, []part{{field: "file", filename: "a.txt", contentType: "text/plain", data: []byte("x")}}, 415, "unsupported_audio_type"},
			{"too large", key, []part{{field: "file", filename: "big.wav", contentType: "audio/wav", data: bytes.Repeat([]byte{1}, 30<<20+1)}}, 413, "audio_too_large"},
			{"feature off", p.AppKey, []part{{field: "file", filename: "a.mp3", contentType: "audio/mp3", data: []byte("x")}}, 400, "speech_to_text_disabled"},
		} {
			if st, body := post(tc.key, tc.parts...); st != tc.status || !strings.Contains(string(body), `"`+tc.code+`"`) {
				t.Errorf("%s: %d %s, want %d %s", tc.name, st, body, tc.status, tc.code)
			}
		}

		// Text to speech: the audio of the text, with the app's voice.
		st, body = rawCall(t, p, http.MethodPost, "/text-to-audio", `{"text":"Good morning.","user":"voice-user"}`, key)
		if st != 200 || string(body) != openaitest.SpeechHeader+"nova:Good morning." {
			t.Fatalf("text-to-audio = %d %q", st, body)
		}
		st, body = rawCall(t, p, http.MethodPost, "/text-to-audio", `{"text":"Hi.","voice":"echo"}`, key)
		if st != 200 || string(body) != openaitest.SpeechHeader+"echo:Hi." {
			t.Fatalf("text-to-audio with a voice = %d %q", st, body)
		}
		if st, body := rawCall(t, p, http.MethodPost, "/text-to-audio", `{"text":"Hi."}`, p.AppKey); st != 400 || !strings.Contains(string(body), "TTS is not enabled") {
			t.Fatalf("text-to-audio, feature off = %d %s", st, body)
		}
		if st, body := rawCall(t, p, http.MethodPost, "/text-to-audio", `{"user":"voice-user"}`, key); st != 400 || !strings.Contains(string(body), `"invalid_param"`) {
			t.Fatalf("text-to-audio without text = %d %s", st, body)
		}
		if st, _ := rawCall(t, p, http.MethodPost, "/text-to-audio", `{"message_id":"`+"7d1f3c55-0000-4000-8000-000000000000"+`","user":"voice-user"}`, key); st != 404 {
			t.Fatalf("text-to-audio of an unknown message = %d", st)
		}

		// Auto-play: the streamed answer is read aloud.
		c := newClient(t, p, key)
		q := marker(t, "read this aloud")
		upstream.On(q, openaitest.Reply{Text: "The first sentence is here. And a second one follows it."})
		evs := streamEvents(t, c, chatBody(q, "voice-user", true))
		var names []string
		var audio []byte
		for _, ev := range evs {
			name := eventName(t, ev)
			names = append(names, name)
			if name == "tts_message" {
				m, _ := ev.AsTtsMessageEvent()
				b, err := base64.StdEncoding.DecodeString(m.Audio)
				if err != nil {
					t.Fatal(err)
				}
				audio = append(audio, b...)
			}
		}
		if len(names) < 3 || names[len(names)-1] != "tts_message_end" || names[len(names)-2] != "message_end" && names[len(names)-2] != "tts_message" {
			t.Fatalf("events = %v", names)
		}
		want := openaitest.SpeechHeader + "nova:The first sentence is here." + openaitest.SpeechHeader + "nova: And a second one follows it."
		if string(audio) != want {
			t.Fatalf("spoken audio = %q, want %q", audio, want)
		}
		// Blocking answers carry no audio.
		resp, _ := c.SendChatMessageWithResponse(ctx, nil, chatBody(q, "voice-user", false))
		if resp.JSON200 == nil {
			t.Fatalf("blocking: %s", resp.Body)
		}
		// The message's answer can be read again by id.
		st, body = rawCall(t, p, http.MethodPost, "/text-to-audio", fmt.Sprintf(`{"message_id":%q,"user":"voice-user"}`, resp.JSON200.MessageId), key)
		if st != 200 || !strings.HasSuffix(string(body), "The first sentence is here. And a second one follows it.") {
			t.Fatalf("text-to-audio of a message = %d %q", st, body)
		}
		var params map[string]any
		_, raw := rawCall(t, p, http.MethodGet, "/parameters", "", key)
		_ = json.Unmarshal(raw, &params)
		if tts, _ := params["text_to_speech"].(map[string]any); tts["autoPlay"] != "enabled" || tts["voice"] != "nova" {
			t.Fatalf("parameters text_to_speech = %v", params["text_to_speech"])
		}
	})
}

// enableReply switches annotation reply on for the app of c and waits for the job.
func enableReply(t *testing.T, c *client.ClientWithResponses) {
	t.Helper()
	r, err := c.SetAnnotationReplyWithResponse(context.Background(), client.SetAnnotationReplyParamsActionEnable, client.AnnotationReplyRequest{
		EmbeddingProviderName: "openai", EmbeddingModelName: "text-embedding-3-small", ScoreThreshold: 0.9})
	if err != nil || r.JSON200 == nil {
		t.Fatalf("enable: %v %s", err, r.Body)
	}
	if st := waitJob(t, c, client.GetAnnotationReplyStatusParamsActionEnable, r.JSON200.JobId); st.JobStatus != client.AnnotationReplyJobStatusJobStatusCompleted {
		t.Fatalf("enable = %+v", st)
	}
}

// annotated creates an annotation for the app of c and returns it.
func annotated(t *testing.T, c *client.ClientWithResponses, question, answer string) client.Annotation {
	t.Helper()
	r, err := c.CreateAnnotationWithResponse(context.Background(), client.AnnotationRequest{Question: question, Answer: answer})
	if err != nil || r.JSON201 == nil {
		t.Fatalf("create annotation: %v %s", err, r.Body)
	}
	return *r.JSON201
}

// rawStream posts a streaming chat message and returns its events as JSON objects, in order.
func rawStream(t *testing.T, p *Parley, key, body string) []map[string]any {
	t.Helper()
	evs := hiStream(t, http.MethodPost, p.URL+"/chat-messages", body, key)
	out := make([]map[string]any, len(evs))
	for i, ev := range evs {
		out[i] = ev
	}
	return out
}

func eventNames(evs []map[string]any) string {
	names := make([]string, len(evs))
	for i, ev := range evs {
		names[i], _ = ev["event"].(string)
	}
	return strings.Join(names, " ")
}

// annotationOf is the annotation_reply id of a stream's message_end, or "".
func annotationOf(evs []map[string]any) string {
	for _, ev := range evs {
		if ev["event"] == "message_end" {
			md, _ := ev["metadata"].(map[string]any)
			ar, _ := md["annotation_reply"].(map[string]any)
			id, _ := ar["id"].(string)
			return id
		}
	}
	return ""
}

// TestAnnotationReplyEveryKind answers from an annotation in every app kind Dify does — a Legacy
// Agent, a Chatflow and an Agent app (the Chatbot is TestAnnotations') — with the annotation's
// text as one message event and annotation_reply in message_end, and no model call; and reads the
// answers of a Legacy Agent and a Chatflow aloud with auto-play on (tts_message, then
// tts_message_end after the closing event).
func TestAnnotationReplyEveryKind(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		tag := strings.ReplaceAll(t.Name(), "/", "-")

		// Legacy Agent.
		agentKey := p.CLI(t, "keys", "create", "--app", "agent")
		ac := newClient(t, p, agentKey)
		enableReply(t, ac)
		q := "Which tool computes sums " + marker(t, "agent") + "?"
		a := annotated(t, ac, q, "The calculator does.")
		evs := rawStream(t, p, agentKey, fmt.Sprintf(`{"query":%q,"inputs":{},"user":"u","response_mode":"streaming"}`, q))
		if got := eventNames(evs); got != "message message_end" || evs[0]["answer"] != a.Answer || annotationOf(evs) != a.Id {
			t.Fatalf("legacy agent: %s %v", got, evs)
		}
		if _, ok := evs[1]["metadata"].(map[string]any)["retriever_resources"]; !ok {
			t.Errorf("legacy agent message_end without retriever_resources: %v", evs[1])
		}

		// Chatflow, with auto-play on: an annotation answers without running the graph.
		flow := "Annotated Flow " + tag
		flowKey := exampleApp(t, p, chatflowDSL(t, flow), flow, flow, "    file_upload: {enabled: false}\n",
			"    file_upload: {enabled: false}\n    text_to_speech: {enabled: true, voice: fable, autoPlay: enabled}\n")
		fc := newClient(t, p, flowKey)
		enableReply(t, fc)
		q = "When does the shop open " + marker(t, "flow") + "?"
		a = annotated(t, fc, q, "At nine.")
		evs = rawStream(t, p, flowKey, fmt.Sprintf(`{"query":%q,"inputs":{"name":"Ann"},"user":"u","response_mode":"streaming"}`, q))
		// The answer is shorter than a sentence worth a call of its own: it is read once it is
		// complete, after message_end (in as many tts_message events as the audio arrives in).
		names := eventNames(evs)
		if strings.ReplaceAll(names, "tts_message ", "") != "message message_end tts_message_end" || !strings.Contains(names, "tts_message ") ||
			evs[0]["answer"] != a.Answer || annotationOf(evs) != a.Id {
			t.Fatalf("chatflow: %s %v", names, evs)
		}
		// Not annotated: the graph runs and its answer is read aloud after workflow_finished.
		q = marker(t, "flow question")
		upstream.On(q, openaitest.Reply{Text: "The graph answers in full. Then it adds a second sentence."})
		evs = rawStream(t, p, flowKey, fmt.Sprintf(`{"query":%q,"inputs":{"name":"Ann"},"user":"u","response_mode":"streaming"}`, q))
		names = eventNames(evs)
		// Where the audio lands among the other events depends on how fast the speech model
		// answers; its end follows the closing workflow_finished.
		if !strings.Contains(names, "tts_message ") || !strings.HasSuffix(names, "tts_message_end") ||
			!strings.Contains(strings.ReplaceAll(names, "tts_message ", ""), "message_end workflow_finished tts_message_end") {
			t.Fatalf("chatflow with auto-play: %s", names)
		}
		var audio []byte
		for _, ev := range evs {
			if ev["event"] == "tts_message" {
				b, _ := base64.StdEncoding.DecodeString(ev["audio"].(string))
				audio = append(audio, b...)
			}
		}
		if want := openaitest.SpeechHeader + "fable:Hi Ann: The graph answers in full." + openaitest.SpeechHeader + "fable: Then it adds a second sentence."; string(audio) != want {
			t.Fatalf("chatflow audio %q, want %q", audio, want)
		}

		// Legacy Agent with auto-play: its agent_message text is read aloud.
		speakerKey := p.CLI(t, "keys", "create", "--app", "agent-speaker")
		q = marker(t, "agent speaks")
		upstream.On(q, openaitest.Reply{Text: "Agents can talk."})
		evs = rawStream(t, p, speakerKey, fmt.Sprintf(`{"query":%q,"inputs":{},"user":"u","response_mode":"streaming"}`, q))
		names = eventNames(evs)
		if !strings.Contains(names, "agent_message") || !strings.Contains(names, "tts_message ") ||
			!strings.HasSuffix(strings.ReplaceAll(names, "tts_message ", ""), "message_end tts_message_end") {
			t.Fatalf("legacy agent with auto-play: %s", names)
		}

		// Agent app: the annotation closes the answer as one message; no retriever_resources.
		dslPath := filepath.Join(t.TempDir(), "agent.yml")
		if err := os.WriteFile(dslPath, []byte(agentAppDSL("Instructions for {{who}} "+tag+".", "Hi.")), 0o600); err != nil {
			t.Fatal(err)
		}
		p.CLI(t, "apps", "import", "--lenient", dslPath)
		p.CLI(t, "apps", "publish", "Desk Agent")
		appKey := p.CLI(t, "keys", "create", "--app", "Desk Agent")
		dc := newClient(t, p, appKey)
		enableReply(t, dc)
		q = "Who answers the desk " + marker(t, "agent app") + "?"
		a = annotated(t, dc, q, "The clerk.")
		evs = rawStream(t, p, appKey, fmt.Sprintf(`{"query":%q,"inputs":{"who":"Bo"},"user":"u"}`, q))
		if got := eventNames(evs); got != "message message_end" || evs[0]["answer"] != a.Answer || annotationOf(evs) != a.Id {
			t.Fatalf("agent app: %s %v", got, evs)
		}
		if _, ok := evs[1]["metadata"].(map[string]any)["retriever_resources"]; ok {
			t.Errorf("agent app message_end with retriever_resources: %v", evs[1])
		}
	})
}
