package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/annotations"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/audio"
	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/conversations"
	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/health"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/safeerr"
	"github.com/parleyhq/parley/internal/segment"
	"github.com/parleyhq/parley/internal/sites"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/triggers"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/chatflow"
	"github.com/parleyhq/parley/internal/workflow/humaninput"
)

// This file is where the errors of the domain packages meet the contract. Handlers return them
// as they get them (wrapped with %w if they add context); Echo's error handler and the `error`
// event of a stream both call mapError. docs/errors.md describes the convention.

// Messages Dify uses for these failures.
const (
	msgConversationNotExists = "Conversation Not Exists."
	msgConversationEnded     = "The conversation has ended. Please start a new conversation."
	// msgProviderNotInit replaces Dify's, which points at a settings page Parley does not have.
	msgProviderNotInit = "No valid model provider credentials found: set the API key variable of the app's model provider " +
		"(its api_key_env in the config file) and restart Parley."
	msgModelNotSupported  = "The app's model is currently not supported."
	msgFileTypeNotAllowed = "File type not allowed."
	// msgShuttingDown is Parley's own: Dify has no answer for a stream its server stops.
	msgShuttingDown = "The server is shutting down; the answer was not completed."
)

// mapError gives the contract error — status, code and client-safe message — for an error of
// the domain packages, and a 500 for one it does not recognise. It is what a stream's `error`
// event shows; Echo's error handler uses it (through toAPIError) for every failed request.
func mapError(err error) *APIError {
	if e := mapDomain(err); e != nil {
		return e
	}
	return errInternal(err)
}

// knowledgeKinds gives each kind of knowledge failure Dify's status and code; the message is
// the error's own.
var knowledgeKinds = map[knowledge.Kind]struct {
	status int
	code   string
}{
	knowledge.KindInvalid:          {http.StatusBadRequest, "invalid_param"},
	knowledge.KindNotFound:         {http.StatusNotFound, "not_found"},
	knowledge.KindAPIDisabled:      {http.StatusForbidden, "forbidden"},
	knowledge.KindNameDuplicate:    {http.StatusConflict, "dataset_name_duplicate"},
	knowledge.KindInUse:            {http.StatusConflict, "dataset_in_use"},
	knowledge.KindArchived:         {http.StatusForbidden, "archived_document_immutable"},
	knowledge.KindNotInitialized:   {http.StatusBadRequest, "dataset_not_initialized"},
	knowledge.KindNoEmbeddingModel: {http.StatusBadRequest, "provider_not_initialize"},
	knowledge.KindInvalidAction:    {http.StatusBadRequest, "invalid_action"},
	// An external knowledge base's API failed. Like a model provider's failure
	// (completion_request_error), it is answered 400, never a 5xx: the server did not fail.
	knowledge.KindExternalRequest: {http.StatusBadRequest, "external_knowledge_request_error"},
}

// mapDomain is mapError for the errors it recognises, nil for the rest. The order matters
// only for an error whose chain holds several of these; the first case that matches wins.
// Every mapped error keeps err as its cause, for the log.
func mapDomain(err error) *APIError {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	e := domainOutcome(err)
	if e == nil {
		return nil
	}
	return e.withCause(err)
}

func domainOutcome(err error) *APIError {
	var (
		perr     *providers.Error
		inputErr *apps.InputError
		limitErr *run.LimitError
		ext      *files.ExtensionNotAllowedError
		tooLarge *files.TooLargeError
		kerr     *knowledge.Error
		xerr     *extract.Error
		// internal/workflow/chatflow
		runFailed *chatflow.RunFailedError
		formData  *workflow.FormDataError
		badGraph  *chatflow.InvalidGraphError
		// internal/triggers
		webhookReq *triggers.RequestError
		unusable   *models.UnusableError
		// internal/conversations
		varName *conversations.VariableNameError
		varType *conversations.VariableTypeError
		// internal/health: a dependency that cannot be reached
		unavailable *health.UnavailableError
	)
	switch {
	// A database or Redis that cannot be reached: 503, whatever the operation was doing.
	case errors.As(err, &unavailable):
		return errUnavailable(unavailable.Dependency)
	case store.IsUnavailable(err):
		return errUnavailable("database")
	// A run cut by the end of the shutdown grace period, or refused because the server is
	// stopping: the client may retry against a server that is up.
	case errors.Is(err, run.ErrShuttingDown):
		return apiError(http.StatusServiceUnavailable, "service_unavailable", msgShuttingDown)
	// internal/workflow/humaninput
	case errors.Is(err, humaninput.ErrFormNotFound):
		return apiError(http.StatusNotFound, "not_found", "Form not found")
	case errors.Is(err, humaninput.ErrRunNotFound):
		return apiError(http.StatusNotFound, "not_found", msgWorkflowRunNotFound)
	case errors.Is(err, humaninput.ErrFormSubmitted):
		return apiError(http.StatusPreconditionFailed, "human_input_form_submitted", "This form has already been submitted.")
	case errors.Is(err, humaninput.ErrFormExpired):
		return apiError(http.StatusPreconditionFailed, "human_input_form_expired", "This form has expired.")
	case errors.As(err, &formData):
		// The message names the action or input the client sent.
		return apiError(http.StatusBadRequest, "invalid_form_data", formData.SafeMessage())

	// internal/knowledge: the kind says how, the error says what.
	case errors.As(err, &kerr):
		k, ok := knowledgeKinds[kerr.Kind]
		if !ok {
			return nil
		}
		return apiError(k.status, k.code, kerr.SafeMessage())

	// internal/extract and internal/segment: a document or a rule the service refuses.
	case errors.As(err, &xerr):
		return errInvalidParam(xerr.SafeMessage())
	case errors.Is(err, segment.ErrNoSubchunkSegmentation):
		return errInvalidParam(segment.ErrNoSubchunkSegmentation.Error())
	case errors.As(err, new(*segment.ValidationError)), errors.As(err, new(*segment.LengthError)),
		errors.As(err, new(*segment.OverlapError)):
		msg, _ := safeerr.Message(err)
		return errInvalidParam(msg)

	// internal/files
	case errors.Is(err, files.ErrUnsupportedType):
		return apiError(http.StatusUnsupportedMediaType, "unsupported_file_type", msgFileTypeNotAllowed)
	case errors.Is(err, files.ErrFilenameMissing):
		return apiError(http.StatusBadRequest, "filename_not_exists_error", "The specified filename does not exist.")
	case errors.Is(err, files.ErrInvalidFilename):
		return errInvalidParam("Filename contains invalid characters")
	case errors.As(err, &ext):
		return errInvalidParam(ext.SafeMessage())
	case errors.As(err, &tooLarge):
		return apiError(http.StatusRequestEntityTooLarge, "file_too_large", fileTooLargeMessage(tooLarge))
	case errors.Is(err, files.ErrFileNotFound):
		return errInvalidParam("Invalid upload file id.")
	case errors.Is(err, files.ErrBadSignature):
		// Dify's answer to a tool file link that is forged or expired.
		return apiError(http.StatusForbidden, "forbidden", "Invalid request.")
	case errors.Is(err, files.ErrInvalidURL), errors.Is(err, files.ErrRemoteForbidden), errors.Is(err, files.ErrRemoteFetch):
		// The causes name internal addresses and the resolver; files.Service logs them.
		msg, _ := safeerr.Message(err)
		return errInvalidParam(msg)

	// internal/chat
	case errors.Is(err, chat.ErrFileReference):
		return errInvalidParam(wrapText(err, chat.ErrFileReference))
	case errors.Is(err, chat.ErrNoPrompt):
		// Dify fails such a call as a bad request to the model.
		return apiError(http.StatusBadRequest, "completion_request_error", wrapText(err, chat.ErrNoPrompt))
	case errors.As(err, &limitErr):
		return apiError(http.StatusTooManyRequests, "too_many_requests", fmt.Sprintf(
			"Too many requests. Please try again later. The current maximum concurrent requests allowed for %s is %d.",
			limitErr.AppID, limitErr.Limit))
	case errors.Is(err, run.ErrConversationNotFound):
		return apiError(http.StatusNotFound, "not_found", msgConversationNotExists)
	case errors.Is(err, run.ErrConversationEnded):
		return apiError(http.StatusBadRequest, "conversation_completed", msgConversationEnded)
	case errors.Is(err, run.ErrInvalidConversationID):
		return errInvalidParam(run.ErrInvalidConversationID.Error())
	case errors.Is(err, run.ErrStreamingOnly):
		return apiError(http.StatusBadRequest, "bad_request", "Agent App only supports streaming response mode.")
	case errors.Is(err, run.ErrModeNotSupported):
		return apiError(http.StatusBadRequest, "app_unavailable", "App unavailable: this server does not run apps of this mode yet.")

	// internal/providers: the kind of upstream failure, with the provider's client-safe message.
	case errors.As(err, &perr):
		switch perr.Kind {
		case providers.KindCredentials:
			return apiError(http.StatusBadRequest, "provider_not_initialize", perr.SafeMessage())
		case providers.KindQuota:
			return apiError(http.StatusBadRequest, "provider_quota_exceeded", perr.SafeMessage())
		case providers.KindModel:
			return apiError(http.StatusBadRequest, "model_currently_not_support", perr.SafeMessage())
		default:
			return apiError(http.StatusBadRequest, "completion_request_error", perr.SafeMessage())
		}

	// internal/apps
	case errors.As(err, &inputErr):
		return errInvalidParam(inputErr.SafeMessage())
	case errors.Is(err, apps.ErrNotFound):
		// The key's app was deleted or the config no longer declares it.
		return apiError(http.StatusBadRequest, "app_unavailable", msgAppUnavailable)
	// Dify raises the first as a ValueError (hence invalid_param); GET /parameters answers it
	// differently (see GetAppParameters).
	case errors.Is(err, apps.ErrNoBoundAgent):
		return errInvalidParam("Agent App has no bound Agent")
	case errors.Is(err, apps.ErrAgentNotPublished):
		return apiError(http.StatusBadRequest, "agent_not_published", "Agent has not been published. Please publish the Agent before using the API.")
	case errors.Is(err, apps.ErrQueryRequired):
		return errInvalidParam("query is required")

	// internal/workflow/chatflow: the version a Chatflow message runs, and a failed run.
	case errors.Is(err, chatflow.ErrWorkflowIDInvalid):
		return apiError(http.StatusBadRequest, "bad_request", "Invalid workflow_id format: expected a UUID.")
	case errors.Is(err, chatflow.ErrDraftWorkflow):
		return apiError(http.StatusBadRequest, "bad_request", "Cannot use draft workflow version. Please use a published workflow version or leave workflow_id empty.")
	case errors.Is(err, chatflow.ErrVersionExecutionNotAllowed):
		return apiError(http.StatusForbidden, "workflow_version_execution_not_allowed",
			"Workflow version execution is not allowed on this server: leave workflow_id empty to run the latest published version.")
	case errors.Is(err, chatflow.ErrWorkflowNotFound):
		return apiError(http.StatusNotFound, "not_found", "Workflow not found with id.")
	case errors.Is(err, chatflow.ErrNotPublished):
		return errInvalidParam("Workflow not published")
	case errors.As(err, &runFailed):
		return errInvalidParam(runFailed.Error())
	case errors.As(err, &badGraph):
		return errInvalidParam(badGraph.Error())
	case errors.Is(err, chatflow.ErrTriggeredOnly):
		return errInvalidParam("This workflow starts from triggers (webhook, schedule), not from a user input form: it runs when a trigger fires.")

	// internal/triggers: a webhook's URL, and a request its manifest refuses.
	case errors.Is(err, triggers.ErrWebhookNotFound):
		return apiError(http.StatusNotFound, "not_found", "Webhook not found.")
	case errors.Is(err, triggers.ErrWebhookPaused):
		return apiError(http.StatusNotFound, "not_found", "Webhook trigger is disabled.")
	case errors.As(err, &webhookReq):
		if webhookReq.Status == http.StatusRequestEntityTooLarge {
			return apiError(webhookReq.Status, "request_entity_too_large", webhookReq.Message)
		}
		return apiError(http.StatusBadRequest, "bad_request", webhookReq.Message)

	// internal/models
	case errors.As(err, &unusable):
		// Dify sends its users to a settings page Parley does not have; say what to set instead.
		return apiError(http.StatusBadRequest, "provider_not_initialize",
			fmt.Sprintf("Model provider %q is not usable: %s, then restart Parley.", unusable.Provider, unusable.Reason))
	case errors.Is(err, models.ErrProviderNotConfigured), errors.Is(err, models.ErrProviderNotFound):
		return apiError(http.StatusBadRequest, "provider_not_initialize", msgProviderNotInit)
	case errors.Is(err, models.ErrModelNotFound):
		return apiError(http.StatusBadRequest, "model_currently_not_support", msgModelNotSupported)
	case errors.Is(err, models.ErrUnknownType):
		return errInvalidParam(wrapText(err, models.ErrUnknownType))

	// internal/conversations, with Dify's messages.
	case errors.Is(err, conversations.ErrConversationNotFound):
		return apiError(http.StatusNotFound, "not_found", msgConversationNotExists)
	case errors.Is(err, conversations.ErrLastNotFound):
		return apiError(http.StatusNotFound, "not_found", "Last Conversation Not Exists.")
	case errors.Is(err, conversations.ErrMessageNotFound):
		return apiError(http.StatusNotFound, "not_found", "Message Not Exists.")
	case errors.Is(err, conversations.ErrFirstNotFound):
		return apiError(http.StatusNotFound, "not_found", "First Message Not Exists.")
	case errors.Is(err, conversations.ErrNoFeedback):
		return errInvalidParam("Feedback does not exist.")
	case errors.Is(err, conversations.ErrNameRequired):
		return errInvalidParam("name is required when auto_generate is false")
	case errors.Is(err, conversations.ErrNoMessages):
		return errInvalidParam("The conversation has no message to generate a name from.")
	case errors.Is(err, conversations.ErrSuggestDisabled):
		return apiError(http.StatusBadRequest, "bad_request", "Suggested Questions Is Disabled.")
	case errors.Is(err, conversations.ErrVariableNotFound):
		return apiError(http.StatusNotFound, "not_found", "Conversation Variable Not Exists.")
	case errors.Is(err, conversations.ErrLastVariableNotFound):
		// Dify raises this one as a ValueError: invalid_param, not not_found.
		return errInvalidParam("Last Conversation Variable Not Exists.")
	case errors.Is(err, conversations.ErrInvalidValue):
		return errInvalidParam(conversations.ErrInvalidValue.Error())
	case errors.As(err, &varName):
		return errInvalidParam(varName.Msg)
	case errors.As(err, &varType):
		return apiError(http.StatusBadRequest, "bad_request", varType.Error())

	// internal/annotations and internal/audio: the error's text is Dify's message.
	case errors.Is(err, annotations.ErrNotFound):
		return apiError(http.StatusNotFound, "not_found", annotations.ErrNotFound.Error())
	case errors.Is(err, annotations.ErrJobNotFound):
		return errInvalidParam(annotations.ErrJobNotFound.Error())
	case errors.Is(err, annotations.ErrUnsupportedAction):
		return errInvalidParam(annotations.ErrUnsupportedAction.Error())
	case errors.Is(err, audio.ErrNoAudio):
		return apiError(http.StatusBadRequest, "no_audio_uploaded", audio.ErrNoAudio.Error())
	case errors.Is(err, audio.ErrTooLarge):
		return apiError(http.StatusRequestEntityTooLarge, "audio_too_large", audio.ErrTooLarge.Error())
	case errors.Is(err, audio.ErrUnsupportedType):
		return apiError(http.StatusUnsupportedMediaType, "unsupported_audio_type", audio.ErrUnsupportedType.Error())
	case errors.Is(err, audio.ErrSpeechToTextDisabled):
		return apiError(http.StatusBadRequest, "speech_to_text_disabled", audio.ErrSpeechToTextDisabled.Error())
	case errors.Is(err, audio.ErrNoSpeechToTextModel):
		return apiError(http.StatusBadRequest, "provider_not_support_speech_to_text", audio.ErrNoSpeechToTextModel.Error())
	case errors.Is(err, audio.ErrNoTextToSpeechModel):
		return apiError(http.StatusBadRequest, "provider_not_support_text_to_speech", audio.ErrNoTextToSpeechModel.Error())
	case errors.Is(err, audio.ErrTextToSpeechDisabled):
		return errInvalidParam(audio.ErrTextToSpeechDisabled.Error())
	case errors.Is(err, audio.ErrNoText):
		return errInvalidParam(audio.ErrNoText.Error())
	case errors.Is(err, audio.ErrMessageNotFound):
		return apiError(http.StatusNotFound, "not_found", audio.ErrMessageNotFound.Error())

	// internal/sites: the web pages' sites and passports.
	case errors.Is(err, sites.ErrNotFound):
		return apiError(http.StatusNotFound, "not_found", msgSiteNotFound)
	case errors.Is(err, sites.ErrPasscodeRequired):
		return apiError(http.StatusUnauthorized, "passcode_required", msgPasscodeRequired)
	case errors.Is(err, sites.ErrInvalidPassport):
		return errUnauthorized(msgInvalidToken)

	// internal/auth: its texts are Dify's 401 messages.
	case errors.Is(err, auth.ErrMissingBearer):
		return errUnauthorized(auth.ErrMissingBearer.Error())
	case errors.Is(err, auth.ErrBearerScheme):
		return errUnauthorized(auth.ErrBearerScheme.Error())
	case errors.Is(err, auth.ErrInvalidKey):
		return errUnauthorized(msgInvalidToken)
	}
	return nil
}

// errUnavailable is the 503 of a request that failed because the server could not reach a
// service it depends on ("database" or "redis"); the replica recovers by itself once the
// service is back.
func errUnavailable(dependency string) *APIError {
	what := "its database"
	if dependency == "redis" {
		what = "the Redis server its replicas share"
	}
	return apiError(http.StatusServiceUnavailable, "service_unavailable",
		fmt.Sprintf("The service is temporarily unavailable: %s cannot be reached. Please try again later.", what))
}

// wrapText is the text of the error that wraps target directly — the domain package's own
// "invalid file reference: files[0].url must be …" — whatever context callers above it added.
// It is target's text when nothing wraps it.
func wrapText(err, target error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e == target || errors.Unwrap(e) == target {
			return e.Error()
		}
	}
	return target.Error()
}

// operationEchoKey is where recordOperation leaves the strict operation's id.
const operationEchoKey = "parley.operation"

// recordOperation is a strict middleware that leaves the operation's id on the Echo context, for
// the error handler's per-operation exceptions and its log.
func recordOperation(f gen.StrictHandlerFunc, operationID string) gen.StrictHandlerFunc {
	return func(c echo.Context, req any) (any, error) {
		c.Set(operationEchoKey, operationID)
		return f(c, req)
	}
}

// forOperation adjusts e where one operation answers a cause differently from the rest.
func forOperation(operationID string, e *APIError) *APIError {
	switch operationID {
	case "CreateDocumentByFile", "CreateDocumentByFileLegacy":
		// Dify's create-by-file does not translate the file service's refusal of a type: it
		// ends as 400 invalid_param with the same message. The update routes answer 415.
		if e.Code == "unsupported_file_type" {
			return errInvalidParam(e.Message).withCause(e)
		}
	}
	return e
}

// errorTypes lists the dynamic types along err's chain ("*fmt.wrapError > *errors.errorString"),
// so the log of an unmapped error says what to map.
func errorTypes(err error) string {
	var out string
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if out != "" {
			out += " > "
		}
		out += fmt.Sprintf("%T", e)
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				walk(inner)
			}
		}
	}
	walk(err)
	return out
}
