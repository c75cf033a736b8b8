package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
)

// Messages Dify uses for these failures.
const (
	msgConversationNotExists = "Conversation Not Exists."
	msgConversationEnded     = "The conversation has ended. Please start a new conversation."
	msgProviderNotInit       = "No valid model provider credentials found. Please go to Settings -> Model Provider to complete your provider credentials."
	msgModelNotSupported     = "The app's model is currently not supported."
)

// domainError maps an error of the domain packages to the contract. It is used for JSON error
// responses and for the `error` event of a stream alike.
func domainError(err error) *APIError {
	var apiErr *APIError
	var perr *providers.Error
	var inputErr *apps.InputError
	var limitErr *chat.LimitError
	var ext *files.ExtensionNotAllowedError
	var tooLarge *files.TooLargeError
	var kerr *knowledge.Error
	var xerr *extract.Error
	switch {
	case errors.As(err, &apiErr):
		return apiErr
	case errors.As(err, &kerr):
		return apiError(kerr.Status, kerr.Code, kerr.Message).withCause(err)
	case errors.As(err, &xerr):
		return errInvalidParam(xerr.Error())
	case errors.Is(err, files.ErrUnsupportedType):
		return apiError(http.StatusUnsupportedMediaType, "unsupported_file_type", "File type not allowed.")
	case errors.Is(err, files.ErrFilenameMissing):
		return apiError(http.StatusBadRequest, "filename_not_exists_error", "The specified filename does not exist.")
	case errors.Is(err, files.ErrInvalidFilename):
		return errInvalidParam("Filename contains invalid characters")
	case errors.As(err, &ext):
		return errInvalidParam(ext.Error())
	case errors.As(err, &tooLarge):
		return apiError(http.StatusRequestEntityTooLarge, "file_too_large", fileTooLargeMessage(tooLarge))
	case errors.Is(err, files.ErrFileNotFound):
		return errInvalidParam("Invalid upload file id.")
	case errors.Is(err, files.ErrInvalidURL), errors.Is(err, files.ErrRemoteForbidden), errors.Is(err, files.ErrRemoteFetch):
		// The causes name internal addresses and the resolver; files.Service logs them.
		msg, _ := files.RemoteErrorMessage(err)
		return errInvalidParam(msg).withCause(err)
	case errors.Is(err, chat.ErrFileReference):
		return errInvalidParam(err.Error())
	case errors.As(err, &perr):
		switch perr.Kind {
		case providers.KindCredentials:
			return apiError(http.StatusBadRequest, "provider_not_initialize", perr.Message).withCause(err)
		case providers.KindQuota:
			return apiError(http.StatusBadRequest, "provider_quota_exceeded", perr.Message).withCause(err)
		case providers.KindModel:
			return apiError(http.StatusBadRequest, "model_currently_not_support", perr.Message).withCause(err)
		default:
			return apiError(http.StatusBadRequest, "completion_request_error", perr.Message).withCause(err)
		}
	case errors.As(err, &inputErr):
		return errInvalidParam(inputErr.Message)
	case errors.As(err, &limitErr):
		return apiError(http.StatusTooManyRequests, "too_many_requests", fmt.Sprintf(
			"Too many requests. Please try again later. The current maximum concurrent requests allowed for %s is %d.",
			limitErr.AppID, limitErr.Limit))
	case errors.Is(err, chat.ErrConversationNotFound):
		return apiError(http.StatusNotFound, "not_found", msgConversationNotExists)
	case errors.Is(err, chat.ErrConversationEnded):
		return apiError(http.StatusBadRequest, "conversation_completed", msgConversationEnded)
	case errors.Is(err, chat.ErrInvalidConversationID):
		return errInvalidParam(chat.ErrInvalidConversationID.Error())
	case errors.Is(err, chat.ErrStreamingOnly):
		return apiError(http.StatusBadRequest, "bad_request", "Agent App only supports streaming response mode.")
	case errors.Is(err, chat.ErrModeNotSupported):
		return apiError(http.StatusBadRequest, "app_unavailable", "App unavailable: this server does not run apps of this mode yet.")
	case errors.Is(err, models.ErrProviderNotConfigured), errors.Is(err, models.ErrProviderNotFound):
		return apiError(http.StatusBadRequest, "provider_not_initialize", msgProviderNotInit).withCause(err)
	case errors.Is(err, models.ErrModelNotFound):
		return apiError(http.StatusBadRequest, "model_currently_not_support", msgModelNotSupported).withCause(err)
	}
	return errInternal(err)
}

// SendChatMessage answers POST /chat-messages, blocking or streaming.
func (s *Server) SendChatMessage(ctx context.Context, req gen.SendChatMessageRequestObject) (gen.SendChatMessageResponseObject, error) {
	app, err := s.chatApp(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	streaming := b.ResponseMode != nil && *b.ResponseMode == gen.Streaming
	rreq := run.Request{
		App: app, User: b.User, Query: b.Query, Inputs: b.Inputs, Streaming: streaming,
		AutoGenerateName: b.AutoGenerateName == nil || *b.AutoGenerateName,
		Files:            runFiles(b.Files),
	}
	if b.ConversationId != nil {
		rreq.ConversationID = *b.ConversationId
	}
	r, err := s.runs.Start(ctx, rreq)
	if err != nil {
		return nil, domainError(err)
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
	return gen.ResponseMetadata{Usage: genUsage(end.Usage), RetrieverResources: genResources(end.Resources)}
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
	if err := s.runs.Stop(ctx, req.TaskId, app.ID, req.Body.User); err != nil {
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
