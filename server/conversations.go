package server

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/conversations"
	"github.com/parleyhq/parley/internal/store"
)

// validID reports whether id is a UUID. Dify declares these path ids as UUIDs, so any other
// value is a conversation or message that does not exist.
func validID(id string) bool {
	_, err := uuid.Parse(id)
	return err == nil
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func genConversation(c store.Conversation) (gen.Conversation, error) {
	out := gen.Conversation{
		Id: mustUUID(c.ID), Name: c.Name, Status: c.Status, Introduction: c.Introduction,
		CreatedAt: c.CreatedAt.Unix(), UpdatedAt: c.UpdatedAt.Unix(), Inputs: map[string]any{},
	}
	if len(c.Inputs) > 0 {
		if err := json.Unmarshal(c.Inputs, &out.Inputs); err != nil {
			return gen.Conversation{}, err
		}
	}
	return out, nil
}

// ListConversations answers GET /conversations.
func (s *Server) ListConversations(ctx context.Context, req gen.ListConversationsRequestObject) (gen.ListConversationsResponseObject, error) {
	app, err := s.chatApp(ctx)
	if err != nil {
		return nil, err
	}
	p := req.Params
	limit := intOr(p.Limit, 20)
	sortBy := ""
	if p.SortBy != nil {
		sortBy = string(*p.SortBy)
	}
	lastID := str(p.LastId)
	if lastID != "" && !validID(lastID) {
		return nil, conversations.ErrLastNotFound
	}
	// `pinned` filters for a page (Dify's web API); the Service API ignores it, as Dify's does
	// (Dify's SDKs send it).
	var pinned *bool
	if passportOf(ctx) != nil {
		pinned = p.Pinned
	}
	items, more, err := s.conversations.ListPinned(ctx, app, str(s.endUserPtr(ctx, p.User)), lastID, limit, sortBy, pinned)
	if err != nil {
		return nil, err
	}
	out := gen.ListConversations200JSONResponse{Limit: limit, HasMore: more, Data: make([]gen.Conversation, 0, len(items))}
	for _, c := range items {
		gc, err := genConversation(c)
		if err != nil {
			return nil, err
		}
		out.Data = append(out.Data, gc)
	}
	return out, nil
}

// RenameConversation answers POST /conversations/{conversation_id}/name.
func (s *Server) RenameConversation(ctx context.Context, req gen.RenameConversationRequestObject) (gen.RenameConversationResponseObject, error) {
	app, err := s.chatApp(ctx)
	if err != nil {
		return nil, err
	}
	if !validID(req.ConversationId) {
		return nil, conversations.ErrConversationNotFound
	}
	b := req.Body
	auto := b.AutoGenerate != nil && *b.AutoGenerate
	if auto {
		if app, err = answering(app); err != nil {
			return nil, err
		}
	}
	c, err := s.conversations.Rename(ctx, app, str(s.endUserPtr(ctx, b.User)), req.ConversationId, str(b.Name), auto)
	if err != nil {
		return nil, err
	}
	gc, err := genConversation(c)
	if err != nil {
		return nil, err
	}
	return gen.RenameConversation200JSONResponse(gc), nil
}

// DeleteConversation answers DELETE /conversations/{conversation_id}: 204, as in Dify.
func (s *Server) DeleteConversation(ctx context.Context, req gen.DeleteConversationRequestObject) (gen.DeleteConversationResponseObject, error) {
	app, err := s.chatApp(ctx)
	if err != nil {
		return nil, err
	}
	if !validID(req.ConversationId) {
		return nil, conversations.ErrConversationNotFound
	}
	if err := s.conversations.Delete(ctx, app, str(s.endUserPtr(ctx, req.Body.User)), req.ConversationId); err != nil {
		return nil, err
	}
	return gen.DeleteConversation204Response{}, nil
}

// ListMessages answers GET /messages.
func (s *Server) ListMessages(ctx context.Context, req gen.ListMessagesRequestObject) (gen.ListMessagesResponseObject, error) {
	app, err := s.chatApp(ctx)
	if err != nil {
		return nil, err
	}
	p := req.Params
	if !validID(p.ConversationId) {
		return nil, conversations.ErrConversationNotFound
	}
	firstID := str(p.FirstId)
	if firstID != "" && !validID(firstID) {
		return nil, conversations.ErrFirstNotFound
	}
	limit := intOr(p.Limit, 20)
	msgs, more, err := s.conversations.Messages(ctx, app, str(s.endUserPtr(ctx, p.User)), p.ConversationId, firstID, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListMessages200JSONResponse{Limit: limit, HasMore: more, Data: make([]gen.HistoryMessage, 0, len(msgs))}
	for _, m := range msgs {
		hm, err := historyMessage(m, s.fileURL)
		if err != nil {
			return nil, err
		}
		out.Data = append(out.Data, hm)
	}
	return out, nil
}

// fileURL is the link a client is given to a message file: a freshly signed one for a tool file.
func (s *Server) fileURL(f store.MessageFile) string {
	if s.files == nil {
		return f.URL
	}
	return s.files.SignedURL(f)
}

func historyMessage(m conversations.HistoryMessage, fileURL func(store.MessageFile) string) (gen.HistoryMessage, error) {
	msgTokens, ansTokens, total := int(m.MessageTokens), int(m.AnswerTokens), int(m.TotalTokens)
	// The store keeps prices as plain decimals ("0" when empty), as the contract wants them.
	latency, currency, price := m.ProviderResponseLatency, m.Currency, m.TotalPrice
	hm := gen.HistoryMessage{
		Id: mustUUID(m.ID), ConversationId: mustUUID(m.ConversationID), Query: m.Query, Answer: m.Answer,
		Status: gen.HistoryMessageStatus(m.Status), CreatedAt: m.CreatedAt.Unix(), Inputs: map[string]any{},
		MessageFiles: make([]gen.MessageFile, 0, len(m.Files)), RetrieverResources: []gen.RetrieverResource{},
		AgentThoughts: []gen.HistoryAgentThought{}, MessageTokens: &msgTokens, AnswerTokens: &ansTokens,
		TotalTokens: &total, ProviderResponseLatency: &latency, TotalPrice: &price, Currency: &currency,
	}
	if m.Status == store.MessageStatusRunning {
		// Still being answered: history shows it as a normal message with the answer so far.
		hm.Status = gen.HistoryMessageStatusNormal
	}
	if m.ParentMessageID != "" {
		hm.ParentMessageId = &m.ParentMessageID
	}
	if m.Error != "" {
		hm.Error = &m.Error
	}
	if len(m.Inputs) > 0 {
		if err := json.Unmarshal(m.Inputs, &hm.Inputs); err != nil {
			return gen.HistoryMessage{}, err
		}
	}
	// The knowledge chunks the answer used are kept in the message metadata, in the shape the
	// contract lists them (run.ResourceJSON).
	if len(m.Metadata) > 0 {
		var meta struct {
			RetrieverResources []gen.RetrieverResource `json:"retriever_resources"`
		}
		if err := json.Unmarshal(m.Metadata, &meta); err != nil {
			return gen.HistoryMessage{}, err
		}
		if meta.RetrieverResources != nil {
			hm.RetrieverResources = meta.RetrieverResources
		}
	}
	if m.Feedback != nil {
		hm.Feedback = &struct {
			Rating gen.HistoryMessageFeedbackRating `json:"rating"`
		}{Rating: gen.HistoryMessageFeedbackRating(m.Feedback.Rating)}
	}
	for _, f := range m.Files {
		mf := gen.MessageFile{
			Id: f.ID, Type: f.Type, TransferMethod: gen.MessageFileTransferMethod(f.TransferMethod),
			BelongsTo: gen.MessageFileBelongsTo(f.BelongsTo), Filename: remoteFilename(f.URL),
		}
		if u := fileURL(f); u != "" {
			mf.Url = &u
		}
		if f.UploadFileID != "" {
			mf.UploadFileId = &f.UploadFileID
		}
		if up := f.Upload; up != nil {
			mf.Filename, mf.MimeType, mf.Size = up.Name, &up.MimeType, &up.Size
		}
		hm.MessageFiles = append(hm.MessageFiles, mf)
	}
	for _, t := range m.Thoughts {
		at, err := historyThought(t)
		if err != nil {
			return gen.HistoryMessage{}, err
		}
		hm.AgentThoughts = append(hm.AgentThoughts, at)
	}
	return hm, nil
}

// historyThought is a stored agent step as GET /messages lists it: its texts as stored, the
// tool labels as an object, the ids of the files it produced.
func historyThought(t store.AgentThought) (gen.HistoryAgentThought, error) {
	labels := map[string]any{}
	if len(t.ToolLabels) > 0 {
		if err := json.Unmarshal(t.ToolLabels, &labels); err != nil {
			return gen.HistoryAgentThought{}, err
		}
	}
	files, created := t.Files, t.CreatedAt.Unix()
	if files == nil {
		files = []string{}
	}
	thought, tool, input, observation := t.Thought, t.Tool, t.ToolInput, t.Observation
	return gen.HistoryAgentThought{
		Id: t.ID, MessageId: t.MessageID, Position: t.Position, Thought: &thought, Tool: &tool,
		ToolLabels: &labels, ToolInput: &input, Observation: &observation, Files: &files, CreatedAt: &created,
	}, nil
}

// SendMessageFeedback answers POST /messages/{message_id}/feedbacks.
func (s *Server) SendMessageFeedback(ctx context.Context, req gen.SendMessageFeedbackRequestObject) (gen.SendMessageFeedbackResponseObject, error) {
	app, err := s.chatApp(ctx)
	if err != nil {
		return nil, err
	}
	if !validID(req.MessageId) {
		return nil, conversations.ErrMessageNotFound
	}
	b := req.Body
	var rating *string
	if b.Rating != nil {
		r := string(*b.Rating)
		rating = &r
	}
	if err := s.conversations.Feedback(ctx, app, s.endUser(ctx, b.User), req.MessageId, rating, str(b.Content)); err != nil {
		return nil, err
	}
	return gen.SendMessageFeedback200JSONResponse{SuccessJSONResponse: gen.SuccessJSONResponse{Result: gen.ResultResultSuccess}}, nil
}

// ListAppFeedbacks answers GET /app/feedbacks.
func (s *Server) ListAppFeedbacks(ctx context.Context, req gen.ListAppFeedbacksRequestObject) (gen.ListAppFeedbacksResponseObject, error) {
	app, err := s.chatApp(ctx)
	if err != nil {
		return nil, err
	}
	fbs, err := s.conversations.AppFeedbacks(ctx, app, intOr(req.Params.Page, 1), intOr(req.Params.Limit, 20))
	if err != nil {
		return nil, err
	}
	out := gen.ListAppFeedbacks200JSONResponse{Data: make([]gen.AppFeedback, 0, len(fbs))}
	for _, f := range fbs {
		af := gen.AppFeedback{
			Id: mustUUID(f.ID), AppId: mustUUID(f.AppID), ConversationId: mustUUID(f.ConversationID),
			MessageId: mustUUID(f.MessageID), Rating: gen.AppFeedbackRating(f.Rating),
			FromSource: gen.AppFeedbackFromSource(f.FromSource), CreatedAt: f.CreatedAt.UTC(), UpdatedAt: f.UpdatedAt.UTC(),
		}
		if f.Content != "" {
			af.Content = &f.Content
		}
		if f.FromEndUserID != "" {
			af.FromEndUserId = &f.FromEndUserID
		}
		if f.FromAccountID != "" {
			af.FromAccountId = &f.FromAccountID
		}
		out.Data = append(out.Data, af)
	}
	return out, nil
}

// GetSuggestedQuestions answers GET /messages/{message_id}/suggested.
func (s *Server) GetSuggestedQuestions(ctx context.Context, req gen.GetSuggestedQuestionsRequestObject) (gen.GetSuggestedQuestionsResponseObject, error) {
	app, err := s.chatApp(ctx)
	if err != nil {
		return nil, err
	}
	if !validID(req.MessageId) {
		return nil, conversations.ErrMessageNotFound
	}
	if app, err = answering(app); err != nil {
		return nil, err
	}
	qs, err := s.conversations.Suggested(ctx, app, s.endUser(ctx, req.Params.User), req.MessageId)
	if err != nil {
		return nil, err
	}
	return gen.GetSuggestedQuestions200JSONResponse{Result: gen.SuggestedQuestionsResultSuccess, Data: qs}, nil
}

// remoteFilename is the name a remote file is shown with: the last segment of its address's
// path, unescaped ("" when it has none).
func remoteFilename(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	p := strings.TrimRight(u.Path, "/")
	return p[strings.LastIndexByte(p, '/')+1:]
}
