package server

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
)

// SendChatMessage answers POST /chat-messages, blocking or streaming.
func (s *Server) SendChatMessage(ctx context.Context, req gen.SendChatMessageRequestObject) (gen.SendChatMessageResponseObject, error) {
	app, err := s.chatApp(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	streaming := b.ResponseMode != nil && *b.ResponseMode == gen.Streaming
	if app.Mode == apps.ModeAgent {
		// Agent apps stream when response_mode is omitted (every other kind then blocks), and
		// run their bound agent's published version.
		if streaming = b.ResponseMode == nil || streaming; !streaming {
			return nil, run.ErrStreamingOnly
		}
		if app, err = apps.AgentRun(app, b.Query); err != nil {
			return nil, err
		}
	}
	rreq := run.Request{
		App: app, User: s.endUser(ctx, b.User), Query: b.Query, Inputs: b.Inputs, Streaming: streaming,
		AutoGenerateName: b.AutoGenerateName == nil || *b.AutoGenerateName,
		Files:            runFiles(b.Files),
	}
	if b.ConversationId != nil {
		rreq.ConversationID = *b.ConversationId
	}
	if b.WorkflowId != nil && app.Mode == apps.ModeAdvancedChat {
		rreq.WorkflowID = *b.WorkflowId
	}
	r, err := s.runs.Start(ctx, rreq)
	if err != nil {
		return nil, err
	}
	if streaming {
		return s.stream(ctx, r), nil
	}
	rep, err := collect(ctx, r)
	if err != nil {
		return nil, err
	}
	return gen.SendChatMessage200JSONResponse{
		Event: gen.ChatCompletionResponseEventMessage, Id: mustUUID(r.MessageID),
		MessageId: mustUUID(r.MessageID), ConversationId: mustUUID(r.ConversationID),
		TaskId: mustUUID(r.TaskID), Mode: gen.AppMode(r.Mode), Answer: rep.answer,
		CreatedAt: r.CreatedAt.Unix(), Metadata: responseMetadata(rep.end),
	}, nil
}

// runFiles are a request's file references as the run engine takes them.
func runFiles(fs *[]gen.FileReference) []run.File {
	if fs == nil {
		return nil
	}
	out := make([]run.File, 0, len(*fs))
	for _, f := range *fs {
		rf := run.File{Type: string(f.Type), TransferMethod: string(f.TransferMethod)}
		if f.Url != nil {
			rf.URL = *f.Url
		}
		if f.UploadFileId != nil {
			rf.UploadFileID = *f.UploadFileId
		}
		out = append(out, rf)
	}
	return out
}

// responseMetadata is the metadata of a blocking reply, from message_end's.
func responseMetadata(end *run.End) gen.ResponseMetadata {
	return gen.ResponseMetadata{Usage: genUsage(end.Usage), RetrieverResources: genResources(end.Resources),
		AnnotationReply: genAnnotationReply(end.Annotation)}
}

func mustUUID(s string) uuid.UUID {
	id, err := uuid.Parse(s)
	if err != nil {
		panic(fmt.Sprintf("server: %q is not a uuid: %v", s, err))
	}
	return id
}

func genUsage(u models.Usage) gen.Usage {
	return gen.Usage{
		PromptTokens: u.PromptTokens, PromptUnitPrice: u.PromptUnitPrice, PromptPriceUnit: u.PromptPriceUnit,
		PromptPrice: u.PromptPrice, CompletionTokens: u.CompletionTokens, CompletionUnitPrice: u.CompletionUnitPrice,
		CompletionPriceUnit: u.CompletionPriceUnit, CompletionPrice: u.CompletionPrice, TotalTokens: u.TotalTokens,
		TotalPrice: u.TotalPrice, Currency: u.Currency, Latency: u.Latency,
	}
}

// StopChatMessage answers POST /chat-messages/{task_id}/stop. As in Dify it answers success
// whether or not the task exists or belongs to this user.
func (s *Server) StopChatMessage(ctx context.Context, req gen.StopChatMessageRequestObject) (gen.StopChatMessageResponseObject, error) {
	app, err := s.chatApp(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.runs.Stop(ctx, req.TaskId, app.ID, s.endUser(ctx, req.Body.User)); err != nil {
		return nil, err
	}
	return gen.StopChatMessage200JSONResponse{SuccessJSONResponse: gen.SuccessJSONResponse{Result: gen.ResultResultSuccess}}, nil
}

// genResources maps the knowledge chunks an answer used to the contract's retriever resources.
func genResources(rs []store.RetrieverResource) []gen.RetrieverResource {
	out := make([]gen.RetrieverResource, len(rs))
	for i, r := range rs {
		id, msgID := mustUUID(r.ID), mustUUID(r.MessageID)
		created := r.CreatedAt.Unix()
		dst, hash, hits, words, segPos := r.DataSourceType, r.IndexNodeHash, r.HitCount, r.WordCount, r.SegmentPosition
		out[i] = gen.RetrieverResource{Id: &id, MessageId: &msgID, Position: r.Position,
			DatasetId: mustUUID(r.DatasetID), DatasetName: r.DatasetName, DocumentId: mustUUID(r.DocumentID),
			DocumentName: r.DocumentName, DataSourceType: &dst, SegmentId: mustUUID(r.SegmentID),
			SegmentPosition: &segPos, IndexNodeHash: &hash, Content: r.Content, Score: float32(r.Score),
			HitCount: &hits, WordCount: &words, CreatedAt: &created}
	}
	return out
}
