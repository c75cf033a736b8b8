package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/jsonenc"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/sse"
)

// This file serves POST /responses, OpenAI's Responses API, text in and text out: the request
// maps onto the app as POST /chat/completions does (openai.go), and the answer is a response
// object, or its events (docs/openai.md).

// Prefixes of the ids of a response and of its message.
const (
	responsePrefix        = "resp_"
	responseMessagePrefix = "msg_"
)

// CreateOpenAIResponse answers POST /responses with the app of the key, blocking or streaming.
func (s *Server) CreateOpenAIResponse(ctx context.Context, req gen.CreateOpenAIResponseRequestObject) (gen.CreateOpenAIResponseResponseObject, error) {
	app, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	msgs, err := responseInput(b.Input)
	if err != nil {
		return nil, err
	}
	if b.Instructions != nil && *b.Instructions != "" {
		msgs = append([]gen.OpenAIChatMessage{chatMessage(gen.OpenAIChatMessageRoleSystem, *b.Instructions)}, msgs...)
	}
	conv, err := readMessages(msgs)
	if err != nil {
		if e, ok := err.(*APIError); ok && e.param == "messages" {
			e.param = "input"
		}
		return nil, err
	}
	q := openAIRequest{conv: conv, inputs: b.Inputs, user: s.endUserPtr(ctx, b.User), stream: b.Stream != nil && *b.Stream}
	if b.PreviousResponseId != nil && *b.PreviousResponseId != "" {
		if q.conversationID, err = s.previousConversation(ctx, app, q.user, *b.PreviousResponseId); err != nil {
			return nil, err
		}
	}
	r, err := s.startOpenAI(ctx, app, q)
	if err != nil {
		return nil, err
	}
	ev := newResponseEvents(r, b.Model, b.Instructions, b.PreviousResponseId)
	if q.stream {
		return s.openAIStream(ctx, r, ev), nil
	}
	a, err := collectOpenAI(ctx, r)
	if err != nil {
		return nil, err
	}
	return gen.CreateOpenAIResponse200JSONResponse(ev.response(a, true)), nil
}

// previousConversation is the conversation of the answer an earlier response id names, which
// must be the user's, of this app.
func (s *Server) previousConversation(ctx context.Context, app *apps.App, user *string, id string) (string, error) {
	notFound := apiError(http.StatusNotFound, "not_found", "Previous response with id '"+id+"' not found.")
	notFound.param = "previous_response_id"
	msg, ok := strings.CutPrefix(id, responsePrefix)
	if _, err := uuid.Parse(msg); !ok || err != nil || !app.IsChat() {
		return "", notFound
	}
	u := openAIDefaultUser
	if user != nil && strings.TrimSpace(*user) != "" {
		u = *user
	}
	conv, err := s.conversations.MessageConversation(ctx, app, u, msg)
	if err != nil {
		if e := mapError(err); e.Status == http.StatusNotFound {
			return "", notFound
		}
		return "", err
	}
	return conv, nil
}

// chatMessage is a message of role with text content.
func chatMessage(role gen.OpenAIChatMessageRole, text string) gen.OpenAIChatMessage {
	var c gen.OpenAIChatMessage_Content
	_ = c.FromOpenAIChatMessageContent0(text)
	return gen.OpenAIChatMessage{Role: role, Content: &c}
}

// responseInput reads a Responses input as chat messages: a text is one user message; a list's
// messages keep their roles and text, input_image parts becoming image_url parts, and items
// of other types (function calls and their outputs, reasoning) are left out.
func responseInput(in gen.OpenAIResponseRequest_Input) ([]gen.OpenAIChatMessage, error) {
	if text, err := in.AsOpenAIResponseRequestInput0(); err == nil {
		return []gen.OpenAIChatMessage{chatMessage(gen.OpenAIChatMessageRoleUser, text)}, nil
	}
	items, err := in.AsOpenAIResponseRequestInput1()
	if err != nil {
		return nil, errOpenAIParam("input", "input must be a string or a list of messages.")
	}
	var out []gen.OpenAIChatMessage
	for i, it := range items {
		if it.Type != nil && *it.Type != "message" || it.Role == nil {
			continue
		}
		role := gen.OpenAIChatMessageRole(*it.Role)
		switch role {
		case gen.OpenAIChatMessageRoleUser, gen.OpenAIChatMessageRoleAssistant, gen.OpenAIChatMessageRoleSystem, gen.OpenAIChatMessageRoleDeveloper:
		default:
			return nil, errOpenAIParam("input["+strconv.Itoa(i)+"].role", "A message's role is user, assistant, system or developer.")
		}
		m := gen.OpenAIChatMessage{Role: role}
		if it.Content != nil {
			if text, err := it.Content.AsOpenAIResponseInputItemContent0(); err == nil {
				m = chatMessage(role, text)
			} else if parts, err := it.Content.AsOpenAIResponseInputItemContent1(); err == nil {
				var cps []gen.OpenAIContentPart
				for _, p := range parts {
					switch p.Type {
					case "input_text", "output_text", "text":
						cps = append(cps, gen.OpenAIContentPart{Type: "text", Text: p.Text})
					case "input_image":
						cp := gen.OpenAIContentPart{Type: "image_url"}
						if p.ImageUrl != nil {
							cp.ImageUrl = &struct {
								Detail *string `json:"detail,omitempty"`
								Url    *string `json:"url,omitempty"`
							}{Url: p.ImageUrl}
						}
						cps = append(cps, cp)
					default:
						cps = append(cps, gen.OpenAIContentPart{Type: p.Type})
					}
				}
				var c gen.OpenAIChatMessage_Content
				_ = c.FromOpenAIChatMessageContent1(cps)
				m.Content = &c
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// responseEvents is the sink of POST /responses: OpenAI's response events, each numbered, named
// by an `event:` line; and the response object they describe.
type responseEvents struct {
	id, msgID, model string
	created          int64
	instructions     *string
	previous         *string
	conversation     *string
	seq              int
	answer           strings.Builder
	// head is a text event's members after its type, up to its own.
	head []byte
	buf  []byte
}

func newResponseEvents(r *run.Run, model string, instructions, previous *string) *responseEvents {
	e := &responseEvents{id: responsePrefix + answerID(r), msgID: responseMessagePrefix + answerID(r), model: model,
		created: createdAt(r), instructions: instructions, previous: previous}
	if r.ConversationID != "" {
		e.conversation = &r.ConversationID
	}
	e.head = jsonenc.AppendString([]byte(`,"item_id":`), e.msgID)
	e.head = append(e.head, `,"output_index":0,"content_index":0`...)
	return e
}

// response is the response object: in progress (done false, no output yet), or finished with
// a's text.
func (e *responseEvents) response(a openAIAnswer, done bool) gen.OpenAIResponse {
	out := gen.OpenAIResponse{Id: e.id, Object: "response", CreatedAt: e.created, Model: e.model, Status: "in_progress",
		Output: []gen.OpenAIResponseOutputMessage{}, Instructions: e.instructions, PreviousResponseId: e.previous,
		ConversationId: e.conversation}
	if !done {
		return out
	}
	out.Status = "completed"
	out.Output = []gen.OpenAIResponseOutputMessage{e.message(a.content, "completed")}
	switch a.finish {
	case gen.OpenAIFinishReasonLength:
		out.Status, out.IncompleteDetails = "incomplete", incomplete("max_output_tokens")
		out.Output[0].Status = "incomplete"
	case gen.OpenAIFinishReasonContentFilter:
		out.Status, out.IncompleteDetails = "incomplete", incomplete("content_filter")
		out.Output[0].Status = "incomplete"
	}
	u := a.usage
	out.Usage = &struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}{u.PromptTokens, u.CompletionTokens, u.TotalTokens}
	return out
}

// incomplete is the incomplete_details of an answer cut short for reason.
func incomplete(reason gen.OpenAIResponseIncompleteDetailsReason) *struct {
	Reason *gen.OpenAIResponseIncompleteDetailsReason `json:"reason,omitempty"`
} {
	return &struct {
		Reason *gen.OpenAIResponseIncompleteDetailsReason `json:"reason,omitempty"`
	}{Reason: &reason}
}

// message is the answer's one output item.
func (e *responseEvents) message(text string, status gen.OpenAIResponseOutputMessageStatus) gen.OpenAIResponseOutputMessage {
	m := gen.OpenAIResponseOutputMessage{Type: "message", Id: e.msgID, Status: status, Role: "assistant",
		Content: []gen.OpenAIResponseOutputText{}}
	if status != "in_progress" {
		m.Content = append(m.Content, outputTextPart(text))
	}
	return m
}

// outputTextPart is an output_text part.
func outputTextPart(text string) gen.OpenAIResponseOutputText {
	return gen.OpenAIResponseOutputText{Type: "output_text", Text: text, Annotations: []map[string]any{}}
}

// queue queues one event: its `event:` line and its data, the type and sequence number first.
func (e *responseEvents) queue(out *sse.Writer, typ string, members []byte) error {
	b := append(e.buf[:0], `{"type":`...)
	b = jsonenc.AppendString(b, typ)
	b = strconv.AppendInt(append(b, `,"sequence_number":`...), int64(e.seq), 10)
	b = append(append(b, members...), '}')
	e.seq++
	e.buf = b
	return out.QueueEvent(typ, b)
}

// queueJSON queues one event whose members are those of v (a struct) after the type and number.
func (e *responseEvents) queueJSON(out *sse.Writer, typ string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	// raw is `{…}`: its members follow the event's own.
	return e.queue(out, typ, append([]byte{','}, raw[1:len(raw)-1]...))
}

// lifecycle queues an event that carries the response.
func (e *responseEvents) lifecycle(out *sse.Writer, typ string, r gen.OpenAIResponse) error {
	return e.queueJSON(out, typ, struct {
		Response gen.OpenAIResponse `json:"response"`
	}{r})
}

// start queues response.created, response.in_progress, the message item and its text part.
func (e *responseEvents) start(out *sse.Writer) error {
	r := e.response(openAIAnswer{}, false)
	if err := e.lifecycle(out, "response.created", r); err != nil {
		return err
	}
	if err := e.lifecycle(out, "response.in_progress", r); err != nil {
		return err
	}
	if err := e.queueJSON(out, "response.output_item.added", struct {
		OutputIndex int                             `json:"output_index"`
		Item        gen.OpenAIResponseOutputMessage `json:"item"`
	}{0, e.message("", "in_progress")}); err != nil {
		return err
	}
	return e.part(out, "response.content_part.added", "")
}

// part queues a content_part event of the text part.
func (e *responseEvents) part(out *sse.Writer, typ, text string) error {
	return e.queueJSON(out, typ, struct {
		ItemID       string                       `json:"item_id"`
		OutputIndex  int                          `json:"output_index"`
		ContentIndex int                          `json:"content_index"`
		Part         gen.OpenAIResponseOutputText `json:"part"`
	}{e.msgID, 0, 0, outputTextPart(text)})
}

// text queues response.output_text.delta.
func (e *responseEvents) text(out *sse.Writer, delta string) error {
	e.answer.WriteString(delta)
	b := jsonenc.AppendString(append(append([]byte(nil), e.head...), `,"delta":`...), delta)
	return e.queue(out, "response.output_text.delta", append(b, `,"logprobs":[]`...))
}

// finish queues the text's and the item's done events and response.completed (or
// response.incomplete for an answer cut short).
func (e *responseEvents) finish(out *sse.Writer, a openAIAnswer) error {
	text := e.answer.String()
	b := jsonenc.AppendString(append(append([]byte(nil), e.head...), `,"text":`...), text)
	if err := e.queue(out, "response.output_text.done", append(b, `,"logprobs":[]`...)); err != nil {
		return err
	}
	if err := e.part(out, "response.content_part.done", text); err != nil {
		return err
	}
	a.content = text
	r := e.response(a, true)
	if err := e.queueJSON(out, "response.output_item.done", struct {
		OutputIndex int                             `json:"output_index"`
		Item        gen.OpenAIResponseOutputMessage `json:"item"`
	}{0, r.Output[0]}); err != nil {
		return err
	}
	typ := "response.completed"
	if r.Status == "incomplete" {
		typ = "response.incomplete"
	}
	return e.lifecycle(out, typ, r)
}

// fail queues the error event that ends a stream that failed.
func (e *responseEvents) fail(out *sse.Writer, err *APIError) error {
	frame := openAIErrorEvent(nil, err, e.seq)
	e.seq++
	return out.QueueFrame(frame)
}

// openAIErrorEvent appends the frame of a Responses stream's error event to dst.
func openAIErrorEvent(dst []byte, e *APIError, seq int) []byte {
	var param *string
	if e.param != "" {
		param = &e.param
	}
	data, _ := json.Marshal(struct {
		Type     string  `json:"type"`
		Sequence int     `json:"sequence_number"`
		Code     string  `json:"code"`
		Message  string  `json:"message"`
		Param    *string `json:"param"`
	}{"error", seq, e.Code, e.Message, param})
	return sse.AppendNamedFrame(dst, "error", data)
}
