package server

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/jsonenc"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/sse"
	"github.com/parleyhq/parley/internal/store"
)

// This file serves the OpenAI-compatible operations: POST /chat/completions answered by the app
// of the key, and GET /models (/models/{model}) listing that app. Errors on their paths are
// OpenAI's error object (openAIBody), whoever raises them: the key check, the request
// validator, a handler. docs/openai.md says how messages map to a conversation.

// openAIDefaultUser is the end user of a request that names none.
const openAIDefaultUser = "openai"

// isOpenAIPath says whether an API path is one of the OpenAI-compatible operations', whose
// errors are OpenAI's error object.
func isOpenAIPath(p string) bool {
	rest, ok := strings.CutPrefix(p, BasePath)
	if !ok {
		return false
	}
	return rest == "/chat/completions" || rest == "/responses" || rest == "/models" || strings.HasPrefix(rest, "/models/")
}

// openAIBody is e as OpenAI's error object: the type from the status, as OpenAI's clients read
// it, and Parley's stable code (a bad key's is OpenAI's invalid_api_key).
func (e *APIError) openAIBody() []byte {
	typ, code := "invalid_request_error", e.Code
	switch {
	case e.Status == http.StatusUnauthorized:
		typ, code = "authentication_error", "invalid_api_key"
	case e.Status == http.StatusForbidden:
		typ = "permission_error"
	case e.Status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case e.Status >= 500:
		typ = "server_error"
	}
	var param *string
	if e.param != "" {
		param = &e.param
	}
	var body gen.OpenAIErrorResponse
	body.Error.Message, body.Error.Type, body.Error.Code, body.Error.Param = e.Message, typ, &code, param
	b, _ := json.Marshal(body)
	return b
}

// errOpenAIParam is a 400 about one member of an OpenAI request.
func errOpenAIParam(param, message string) *APIError {
	e := errInvalidParam(message)
	e.param = param
	return e
}

// ListOpenAIModels answers GET /models: the app of the key.
func (s *Server) ListOpenAIModels(ctx context.Context, _ gen.ListOpenAIModelsRequestObject) (gen.ListOpenAIModelsResponseObject, error) {
	a, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	return gen.ListOpenAIModels200JSONResponse{Object: gen.List, Data: []gen.OpenAIModel{s.openAIModel(a)}}, nil
}

// GetOpenAIModel answers GET /models/{model}: the app of the key, when the name is its name.
func (s *Server) GetOpenAIModel(ctx context.Context, req gen.GetOpenAIModelRequestObject) (gen.GetOpenAIModelResponseObject, error) {
	a, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	if req.Model != a.Name {
		e := apiError(http.StatusNotFound, "model_not_found", "The model `"+req.Model+"` does not exist or you do not have access to it.")
		e.param = "model"
		return nil, e
	}
	return gen.GetOpenAIModel200JSONResponse(s.openAIModel(a)), nil
}

// openAIModel is an app as an OpenAI model.
func (s *Server) openAIModel(a *apps.App) gen.OpenAIModel {
	var created int64
	if !a.CreatedAt.IsZero() {
		created = a.CreatedAt.Unix()
	}
	owner := s.workspaceName
	if owner == "" {
		owner = "parley"
	}
	return gen.OpenAIModel{Id: a.Name, Object: gen.OpenAIModelObjectModel, Created: created, OwnedBy: owner}
}

// CreateOpenAIChatCompletion answers POST /chat/completions with the app of the key, blocking
// or streaming.
func (s *Server) CreateOpenAIChatCompletion(ctx context.Context, req gen.CreateOpenAIChatCompletionRequestObject) (gen.CreateOpenAIChatCompletionResponseObject, error) {
	app, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	if b.N != nil && *b.N != 1 {
		return nil, errOpenAIParam("n", "n must be 1: an app gives one answer.")
	}
	conv, err := readMessages(b.Messages)
	if err != nil {
		return nil, err
	}
	q := openAIRequest{conv: conv, inputs: b.Inputs, user: s.endUserPtr(ctx, b.User), stream: b.Stream != nil && *b.Stream}
	if b.ConversationId != nil {
		q.conversationID = *b.ConversationId
	}
	r, err := s.startOpenAI(ctx, app, q)
	if err != nil {
		return nil, err
	}
	c := newOpenAIChunks(r, b.Model, b.StreamOptions != nil && b.StreamOptions.IncludeUsage != nil && *b.StreamOptions.IncludeUsage)
	if q.stream {
		return s.openAIStream(ctx, r, c), nil
	}
	a, err := collectOpenAI(ctx, r)
	if err != nil {
		return nil, err
	}
	out := gen.CreateOpenAIChatCompletion200JSONResponse{
		Id: c.id, Object: gen.ChatCompletion, Created: c.created, Model: c.model, Usage: a.usage,
		Choices: []gen.OpenAIChoice{{Index: 0, FinishReason: a.finish}},
	}
	out.Choices[0].Message.Role = gen.OpenAIChoiceMessageRoleAssistant
	out.Choices[0].Message.Content = &a.content
	if r.ConversationID != "" {
		out.ConversationId = &r.ConversationID
	}
	return out, nil
}

// openAIRequest is what the OpenAI-compatible operations ask of an app.
type openAIRequest struct {
	conv           openAIConversation
	inputs         *map[string]any
	user           *string
	conversationID string
	stream         bool
}

// startOpenAI starts the app's answer to q: a chat kind continues conversationID or replays the
// given history, a Workflow app takes the query as its `query` input, and system messages go to
// the `system` input (docs/openai.md).
func (s *Server) startOpenAI(ctx context.Context, app *apps.App, q openAIRequest) (*run.Run, error) {
	inputs := map[string]any{}
	if q.inputs != nil {
		maps.Copy(inputs, *q.inputs)
	}
	rreq := run.Request{App: app, User: openAIDefaultUser, Query: q.conv.query, Inputs: inputs, Files: q.conv.files}
	if q.user != nil && strings.TrimSpace(*q.user) != "" {
		rreq.User = *q.user
	}
	switch {
	case app.IsChat():
		if q.conversationID != "" {
			rreq.ConversationID = q.conversationID
		} else {
			rreq.History = q.conv.history
		}
		if app.Mode == apps.ModeAgent {
			var err error
			if rreq.App, err = apps.AgentRun(app, q.conv.query); err != nil {
				return nil, err
			}
		}
	case app.Mode == apps.ModeWorkflow:
		rreq.Query = ""
		fillInput(rreq.App, inputs, "query", q.conv.query)
	}
	fillInput(rreq.App, inputs, "system", q.conv.system)
	// Legacy Agent and Agent apps answer streaming only; a blocking request collects the stream.
	rreq.Streaming = q.stream || rreq.App.StreamingOnly()
	return s.runs.Start(ctx, rreq)
}

// collectOpenAI waits for the whole answer of a run, for a blocking request.
func collectOpenAI(ctx context.Context, r *run.Run) (openAIAnswer, error) {
	if r.Mode == apps.ModeWorkflow {
		res, err := collectWorkflow(ctx, r)
		if err != nil {
			return openAIAnswer{}, err
		}
		return workflowAnswer(res)
	}
	rep, err := collect(ctx, r)
	if err != nil {
		return openAIAnswer{}, err
	}
	return chatAnswer(rep.answer, rep.replaced, rep.end), nil
}

// fillInput sets the app's input name to value when the app's form has it, value is not empty
// and the request left it unset.
func fillInput(a *apps.App, inputs map[string]any, name, value string) {
	if value == "" {
		return
	}
	if v, set := inputs[name]; set && v != nil && v != "" {
		return
	}
	for _, f := range a.UserInputForm {
		if f.Variable == name {
			inputs[name] = value
			return
		}
	}
}

// openAIConversation is what an OpenAI request's messages say: the query (the last user
// message) with its images, the exchanges before it, and the system messages.
type openAIConversation struct {
	query   string
	files   []run.File
	history []store.Message
	system  string
}

// readMessages reads the messages of a request. The last user message is the query; only
// system or developer messages may follow it. Before it, each user message starts an exchange
// (consecutive ones are joined) and an assistant message answers it; tool messages, and
// assistant messages with tool calls only, are left out.
func readMessages(ms []gen.OpenAIChatMessage) (openAIConversation, error) {
	var c openAIConversation
	last := -1
	for i, m := range ms {
		if m.Role == gen.OpenAIChatMessageRoleUser {
			last = i
		}
	}
	if last < 0 {
		return c, errOpenAIParam("messages", "messages must include a user message: the last one is the query.")
	}
	var system []string
	for i, m := range ms {
		text, images, err := messageContent(m, i, i == last)
		if err != nil {
			return c, err
		}
		switch m.Role {
		case gen.OpenAIChatMessageRoleSystem, gen.OpenAIChatMessageRoleDeveloper:
			if text != "" {
				system = append(system, text)
			}
			continue
		}
		if i > last {
			return c, errOpenAIParam("messages", "The last user message must be the last message but for system messages: it is the query.")
		}
		switch {
		case i == last:
			c.query, c.files = text, images
		case m.Role == gen.OpenAIChatMessageRoleUser:
			if n := len(c.history); n > 0 && c.history[n-1].Answer == "" {
				c.history[n-1].Query = joinText(c.history[n-1].Query, text)
			} else {
				c.history = append(c.history, store.Message{Query: text})
			}
		case m.Role == gen.OpenAIChatMessageRoleAssistant && text != "":
			if n := len(c.history); n > 0 {
				c.history[n-1].Answer = joinText(c.history[n-1].Answer, text)
			} else {
				c.history = append(c.history, store.Message{Answer: text})
			}
		}
	}
	c.system = strings.Join(system, "\n\n")
	return c, nil
}

// joinText joins two texts of one turn with a blank line.
func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// messageContent is a message's text (its text parts joined by blank lines) and, for the query,
// its images as files the run fetches.
func messageContent(m gen.OpenAIChatMessage, i int, query bool) (string, []run.File, error) {
	if m.Content == nil {
		return "", nil, nil
	}
	param := "messages[" + strconv.Itoa(i) + "].content"
	if text, err := m.Content.AsOpenAIChatMessageContent0(); err == nil {
		return text, nil, nil
	}
	parts, err := m.Content.AsOpenAIChatMessageContent1()
	if err != nil {
		return "", nil, errOpenAIParam(param, "content must be a string or a list of content parts.")
	}
	var texts []string
	var files []run.File
	for _, p := range parts {
		switch p.Type {
		case "text", "input_text":
			if p.Text != nil && *p.Text != "" {
				texts = append(texts, *p.Text)
			}
		case "image_url":
			if !query {
				continue // an earlier turn's image is not replayed, as a stored one's is not
			}
			if p.ImageUrl == nil || p.ImageUrl.Url == nil {
				return "", nil, errOpenAIParam(param, "An image_url part needs image_url.url.")
			}
			u := *p.ImageUrl.Url
			if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
				return "", nil, errOpenAIParam(param, "image_url.url must be an http or https URL: images given as data URLs are not accepted.")
			}
			files = append(files, run.File{Type: "image", TransferMethod: "remote_url", URL: u})
		default:
			return "", nil, errOpenAIParam(param, "Content parts of type "+strconv.Quote(p.Type)+" are not supported: use text and image_url parts.")
		}
	}
	return strings.Join(texts, "\n\n"), files, nil
}

// openAIAnswer is a finished answer as OpenAI reports it.
type openAIAnswer struct {
	content string
	finish  gen.OpenAIFinishReason
	usage   gen.OpenAIUsage
}

// chatAnswer is the answer of a chat kind or a Completion app: its text, why it ended
// (moderation's replacement, the model's token limit) and its usage.
func chatAnswer(text string, replaced bool, end *run.End) openAIAnswer {
	a := openAIAnswer{content: text, finish: gen.OpenAIFinishReasonStop}
	switch {
	case replaced, end != nil && end.FinishReason == run.FinishContentFilter:
		a.finish = gen.OpenAIFinishReasonContentFilter
	case end != nil && end.FinishReason == "length":
		a.finish = gen.OpenAIFinishReasonLength
	}
	if end != nil {
		u := end.Usage
		a.usage = gen.OpenAIUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	}
	return a
}

// errWorkflowFailed is a Workflow app's run that did not succeed, for the OpenAI operation.
func errWorkflowFailed(status, message string) *APIError {
	if message == "" {
		message = "The workflow run ended " + status + "."
	}
	return apiError(http.StatusBadRequest, "workflow_run_failed", message)
}

// workflowAnswer is a Workflow app's run as an answer: its output named answer, else its only
// output, else all its outputs as JSON; the run's tokens as completion tokens (a run does not
// tell prompt and completion apart). A run that failed or was stopped is an error.
func workflowAnswer(res gen.WorkflowRunResult) (openAIAnswer, error) {
	switch res.Status {
	case gen.WorkflowRunStatusSucceeded, gen.WorkflowRunStatusPartialSucceeded, gen.WorkflowRunStatusPaused:
	default:
		msg := ""
		if res.Error != nil {
			msg = *res.Error
		}
		return openAIAnswer{}, errWorkflowFailed(string(res.Status), msg)
	}
	var outputs map[string]any
	if res.Outputs != nil {
		outputs = *res.Outputs
	}
	a := openAIAnswer{content: outputText(outputs), finish: gen.OpenAIFinishReasonStop,
		usage: gen.OpenAIUsage{CompletionTokens: res.TotalTokens, TotalTokens: res.TotalTokens}}
	return a, nil
}

// outputText is the text a Workflow app's outputs answer with (see workflowAnswer).
func outputText(outputs map[string]any) string {
	v, ok := outputs["answer"]
	if !ok && len(outputs) == 1 {
		for _, only := range outputs {
			v, ok = only, true
		}
	}
	if !ok {
		if len(outputs) == 0 {
			return ""
		}
		v = outputs
	}
	if s, isText := v.(string); isText {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// openAISink writes a streamed answer in one of OpenAI's stream formats: chat completion
// chunks (openAIChunks) or Responses events (responseEvents).
type openAISink interface {
	// start queues what comes before the answer's text.
	start(out *sse.Writer) error
	// text queues text of the answer as it comes.
	text(out *sse.Writer, delta string) error
	// finish queues the end of the answer (a's content has been sent through text).
	finish(out *sse.Writer, a openAIAnswer) error
	// fail queues the error that ends a stream that failed.
	fail(out *sse.Writer, e *APIError) error
}

// openAIStream is the streaming answer of the OpenAI-compatible operations: a run's events
// through a sink, keep-alives as comment lines.
type openAIStream struct {
	ctx  context.Context
	run  *run.Run
	srv  *Server
	sink openAISink
	// answer follows the answer's text through the events.
	answer run.AnswerText
}

func (s *Server) openAIStream(ctx context.Context, r *run.Run, sink openAISink) *openAIStream {
	return &openAIStream{ctx: ctx, run: r, srv: s, sink: sink}
}

// VisitCreateOpenAIChatCompletionResponse implements gen.CreateOpenAIChatCompletionResponseObject.
func (st *openAIStream) VisitCreateOpenAIChatCompletionResponse(w http.ResponseWriter) error {
	return st.write(w)
}

// VisitCreateOpenAIResponseResponse implements gen.CreateOpenAIResponseResponseObject.
func (st *openAIStream) VisitCreateOpenAIResponseResponse(w http.ResponseWriter) error {
	return st.write(w)
}

func (st *openAIStream) write(w http.ResponseWriter) error {
	out := st.srv.startStream(w)
	out.SetPingFrame(sse.CommentPingFrame)
	defer st.srv.endStream(out)
	r := st.run
	// The answer's opening goes out at once, as OpenAI's streams start.
	if st.sink.start(out) != nil || out.Flush() != nil {
		r.Detach()
		return nil
	}
	src := st.srv.runFrames(r, st.send)
	defer src.timer.Stop()
	if !pump(st.ctx, out, src, st.srv.pingInterval) {
		r.Detach()
	}
	return nil
}

// send hands one run event to the sink; done ends the stream after it, detached from a run that
// still sends events after the answer (text to speech, a Chatflow's trailer).
func (st *openAIStream) send(_ context.Context, ev run.Event, out *sse.Writer) (done bool, err error) {
	switch ev.Kind {
	case run.EventPing:
		return false, out.Ping()
	case run.EventAgentMessage, run.EventMessage:
		// A Workflow app's answer is its outputs, sent when it ends.
		if delta := st.answer.Add(ev); delta != "" && st.run.Mode != apps.ModeWorkflow {
			return false, st.sink.text(out, delta)
		}
		return false, nil
	case run.EventMessageReplace:
		// What streamed cannot be taken back: the replacement follows, and the answer finishes
		// as filtered (docs/openai.md).
		st.answer.Add(ev)
		return false, st.sink.text(out, "\n\n"+ev.Answer)
	case run.EventMessageEnd:
		st.run.Detach()
		return true, st.sink.finish(out, chatAnswer("", st.answer.Replaced(), ev.End))
	case run.EventWorkflowFinished, run.EventWorkflowPaused:
		st.run.Detach()
		if st.run.Mode != apps.ModeWorkflow {
			// A Chatflow paused for human input: the answer so far.
			return true, st.sink.finish(out, chatAnswer("", false, nil))
		}
		res, err := decodeWorkflowResult(ev)
		if err != nil {
			return true, st.sink.fail(out, errInternal(err))
		}
		a, err := workflowAnswer(res)
		if err != nil {
			return true, st.sink.fail(out, mapError(err))
		}
		if a.content != "" {
			if err := st.sink.text(out, a.content); err != nil {
				return true, err
			}
		}
		return true, st.sink.finish(out, a)
	case run.EventError:
		return true, st.sink.fail(out, mapError(ev.Err))
	}
	return false, nil
}

// openAIChunks is the sink of POST /chat/completions: chat.completion.chunk objects, then
// [DONE]. Every chunk carries the answer's id, creation time and model, and (Parley's
// extensions) its conversation and task.
type openAIChunks struct {
	id, model    string
	created      int64
	includeUsage bool
	// head is every chunk's members up to `"choices":`; tail what follows the choices.
	head, tail []byte
	buf        []byte
}

func newOpenAIChunks(r *run.Run, model string, includeUsage bool) *openAIChunks {
	c := &openAIChunks{id: "chatcmpl-" + answerID(r), model: model, created: createdAt(r), includeUsage: includeUsage}
	h := jsonenc.AppendString(append(c.head, `{"id":`...), c.id)
	h = append(h, `,"object":"chat.completion.chunk","created":`...)
	h = strconv.AppendInt(h, c.created, 10)
	h = jsonenc.AppendString(append(h, `,"model":`...), model)
	c.head = append(h, `,"system_fingerprint":null,"choices":`...)
	c.tail = []byte(`,"conversation_id":null`)
	if r.ConversationID != "" {
		c.tail = jsonenc.AppendString([]byte(`,"conversation_id":`), r.ConversationID)
	}
	c.tail = append(jsonenc.AppendString(append(c.tail, `,"task_id":`...), r.TaskID), '}')
	return c
}

// answerID is the id an answer is known by: its message's, or a Workflow app's run's.
func answerID(r *run.Run) string {
	if r.MessageID != "" {
		return r.MessageID
	}
	return r.WorkflowRunID
}

// createdAt is when the run started, in Unix seconds.
func createdAt(r *run.Run) int64 {
	if t := r.CreatedAt.Unix(); t > 0 {
		return t
	}
	return time.Now().Unix()
}

// delta is a chunk of one choice: the role (first chunk), content, or the finish reason.
func (c *openAIChunks) delta(role bool, content string, finish gen.OpenAIFinishReason) []byte {
	b := append(append(c.buf[:0], c.head...), `[{"index":0,"delta":{`...)
	switch {
	case role:
		b = append(b, `"role":"assistant","content":""`...)
	case finish == "":
		b = jsonenc.AppendString(append(b, `"content":`...), content)
	}
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = jsonenc.AppendString(b, string(finish))
	}
	c.buf = append(append(b, `}]`...), c.tail...)
	return c.buf
}

// usageChunk is the last chunk of a stream that asked for usage: no choices, the usage.
func (c *openAIChunks) usageChunk(u gen.OpenAIUsage) []byte {
	b := append(append(c.buf[:0], c.head...), `[],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(u.PromptTokens), 10)
	b = strconv.AppendInt(append(b, `,"completion_tokens":`...), int64(u.CompletionTokens), 10)
	b = strconv.AppendInt(append(b, `,"total_tokens":`...), int64(u.TotalTokens), 10)
	c.buf = append(append(b, '}'), c.tail...)
	return c.buf
}

// doneData is the data of the line that ends a chat completion stream.
var doneData = []byte("[DONE]")

func (c *openAIChunks) start(out *sse.Writer) error { return out.Queue(c.delta(true, "", "")) }

func (c *openAIChunks) text(out *sse.Writer, delta string) error {
	return out.Queue(c.delta(false, delta, ""))
}

// finish queues the finishing chunk, the usage chunk if asked for, and [DONE].
func (c *openAIChunks) finish(out *sse.Writer, a openAIAnswer) error {
	if err := out.Queue(c.delta(false, "", a.finish)); err != nil {
		return err
	}
	if c.includeUsage {
		if err := out.Queue(c.usageChunk(a.usage)); err != nil {
			return err
		}
	}
	return out.Queue(doneData)
}

// fail queues the error object, as OpenAI's chat streams end on an error.
func (c *openAIChunks) fail(out *sse.Writer, e *APIError) error { return out.Queue(e.openAIBody()) }
