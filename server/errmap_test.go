package server

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/parleyhq/parley/internal/agent"
	"github.com/parleyhq/parley/internal/annotations"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/apps/dsl"
	"github.com/parleyhq/parley/internal/audio"
	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/blob"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/conversations"
	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/limiter"
	"github.com/parleyhq/parley/internal/llm"
	"github.com/parleyhq/parley/internal/mcpserver"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/moderation"
	"github.com/parleyhq/parley/internal/netguard"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/safeerr"
	"github.com/parleyhq/parley/internal/segment"
	"github.com/parleyhq/parley/internal/sites"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tasks"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/openapi"
	"github.com/parleyhq/parley/internal/tools/toolreg"
	"github.com/parleyhq/parley/internal/triggers"
	"github.com/parleyhq/parley/internal/vectorindex"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/chatflow"
	"github.com/parleyhq/parley/internal/workflow/condition"
	"github.com/parleyhq/parley/internal/workflow/httpreq"
	"github.com/parleyhq/parley/internal/workflow/humaninput"
	"github.com/parleyhq/parley/internal/workflow/listop"
	"github.com/parleyhq/parley/internal/workflow/sandbox"
	"github.com/parleyhq/parley/internal/workflow/template/jinja"
)

// wire is what a client sees of an error.
type wire struct {
	status      int
	code, msg   string
	description string
}

// outcome is a domain error as its package returns it, and its answer.
type outcome struct {
	err  error
	want wire
}

func invalid(msg string) wire { return wire{status: 400, code: "invalid_param", msg: msg} }

const (
	msgTooManyRequests = "Too many requests. Please try again later. The current maximum concurrent requests allowed for app-1 is 2."
)

func kerr(kind knowledge.Kind, msg string) *knowledge.Error {
	return &knowledge.Error{Kind: kind, Message: msg}
}

// domainOutcomes holds every exported sentinel error, error type and failure kind under
// internal/ that a request can end with — keyed by its package path under internal/ and its
// name — with a value as its package returns it and the answer the API gives. A new one that
// is neither here nor in internalFailures fails TestEveryDomainErrorIsClassified.
func domainOutcomes() map[string]outcome {
	fileRef := fmt.Errorf("%w: files[0].url must be an absolute http(s) URL", chat.ErrFileReference)
	noPrompt := fmt.Errorf("%w: gpt-4o is a chat model, and the app has no chat prompt messages", chat.ErrNoPrompt)
	tooLarge := &files.TooLargeError{Limit: 10 << 20, Category: "image"}
	return map[string]outcome{
		"apps.InputError":      {&apps.InputError{Message: "name is required in input form"}, invalid("name is required in input form")},
		"apps.ErrNotFound":     {fmt.Errorf("app x: %w", apps.ErrNotFound), wire{status: 400, code: "app_unavailable", msg: msgAppUnavailable}},
		"apps.ErrNoBoundAgent": {fmt.Errorf("app x: %w", apps.ErrNoBoundAgent), invalid("Agent App has no bound Agent")},
		"apps.ErrAgentNotPublished": {fmt.Errorf("app x: %w", apps.ErrAgentNotPublished),
			wire{status: 400, code: "agent_not_published", msg: "Agent has not been published. Please publish the Agent before using the API."}},
		"apps.ErrQueryRequired": {apps.ErrQueryRequired, invalid("query is required")},

		"annotations.ErrNotFound":          {fmt.Errorf("annotation x: %w", annotations.ErrNotFound), wire{status: 404, code: "not_found", msg: "Annotation not found"}},
		"annotations.ErrJobNotFound":       {fmt.Errorf("annotation job x: %w", annotations.ErrJobNotFound), invalid("The job does not exist.")},
		"annotations.ErrUnsupportedAction": {annotations.ErrUnsupportedAction, invalid("Unsupported annotation reply action")},

		"audio.ErrNoAudio":              {audio.ErrNoAudio, wire{status: 400, code: "no_audio_uploaded", msg: "Please upload your audio."}},
		"audio.ErrTooLarge":             {audio.ErrTooLarge, wire{status: 413, code: "audio_too_large", msg: "Audio size larger than 30 mb"}},
		"audio.ErrUnsupportedType":      {audio.ErrUnsupportedType, wire{status: 415, code: "unsupported_audio_type", msg: "Audio type not allowed."}},
		"audio.ErrSpeechToTextDisabled": {audio.ErrSpeechToTextDisabled, wire{status: 400, code: "speech_to_text_disabled", msg: "Speech to text is disabled."}},
		"audio.ErrNoSpeechToTextModel":  {audio.ErrNoSpeechToTextModel, wire{status: 400, code: "provider_not_support_speech_to_text", msg: "Provider not support speech to text."}},
		"audio.ErrNoTextToSpeechModel":  {audio.ErrNoTextToSpeechModel, wire{status: 400, code: "provider_not_support_text_to_speech", msg: "Provider not support text to speech."}},
		"audio.ErrTextToSpeechDisabled": {audio.ErrTextToSpeechDisabled, invalid("TTS is not enabled")},
		"audio.ErrNoText":               {audio.ErrNoText, invalid("Text is required")},
		"audio.ErrMessageNotFound":      {audio.ErrMessageNotFound, wire{status: 404, code: "not_found", msg: "Message Not Exists."}},

		"auth.ErrMissingBearer":     {auth.ErrMissingBearer, wire{status: 401, code: "unauthorized", msg: "Authorization header must be provided and start with 'Bearer'"}},
		"auth.ErrBearerScheme":      {auth.ErrBearerScheme, wire{status: 401, code: "unauthorized", msg: "Authorization scheme must be 'Bearer'"}},
		"auth.ErrInvalidKey":        {auth.ErrInvalidKey, wire{status: 401, code: "unauthorized", msg: msgInvalidToken}},
		"sites.ErrNotFound":         {sites.ErrNotFound, wire{status: 404, code: "not_found", msg: msgSiteNotFound}},
		"sites.ErrPasscodeRequired": {sites.ErrPasscodeRequired, wire{status: 401, code: "passcode_required", msg: msgPasscodeRequired}},
		"sites.ErrInvalidPassport":  {sites.ErrInvalidPassport, wire{status: 401, code: "unauthorized", msg: msgInvalidToken}},

		"run.ErrConversationNotFound":  {run.ErrConversationNotFound, wire{status: 404, code: "not_found", msg: "Conversation Not Exists."}},
		"run.ErrConversationEnded":     {run.ErrConversationEnded, wire{status: 400, code: "conversation_completed", msg: "The conversation has ended. Please start a new conversation."}},
		"run.ErrInvalidConversationID": {run.ErrInvalidConversationID, invalid("conversation_id must be a valid UUID")},
		// A Workflow app's failed run: the client was told by workflow_finished; the error maps
		// as the failure it wraps.
		"run.ReportedError":       {&run.ReportedError{Err: &chatflow.RunFailedError{Msg: "node llm (LLM): boom"}}, invalid("Run failed: node llm (LLM): boom")},
		"run.ErrStreamingOnly":    {run.ErrStreamingOnly, wire{status: 400, code: "bad_request", msg: "Agent App only supports streaming response mode."}},
		"run.ErrModeNotSupported": {run.ErrModeNotSupported, wire{status: 400, code: "app_unavailable", msg: "App unavailable: this server does not run apps of this mode yet."}},
		"chat.ErrFileReference":   {fileRef, invalid("invalid file reference: files[0].url must be an absolute http(s) URL")},
		"chat.ErrNoPrompt":        {noPrompt, wire{status: 400, code: "completion_request_error", msg: noPrompt.Error()}},
		"run.LimitError":          {&run.LimitError{AppID: "app-1", Limit: 2}, wire{status: 429, code: "too_many_requests", msg: msgTooManyRequests}},

		"conversations.ErrConversationNotFound": {conversations.ErrConversationNotFound, wire{status: 404, code: "not_found", msg: "Conversation Not Exists."}},
		"conversations.ErrLastNotFound":         {conversations.ErrLastNotFound, wire{status: 404, code: "not_found", msg: "Last Conversation Not Exists."}},
		"conversations.ErrMessageNotFound":      {conversations.ErrMessageNotFound, wire{status: 404, code: "not_found", msg: "Message Not Exists."}},
		"conversations.ErrFirstNotFound":        {conversations.ErrFirstNotFound, wire{status: 404, code: "not_found", msg: "First Message Not Exists."}},
		"conversations.ErrNoFeedback":           {conversations.ErrNoFeedback, invalid("Feedback does not exist.")},
		"conversations.ErrNameRequired":         {conversations.ErrNameRequired, invalid("name is required when auto_generate is false")},
		"conversations.ErrNoMessages":           {conversations.ErrNoMessages, invalid("The conversation has no message to generate a name from.")},
		"conversations.ErrSuggestDisabled":      {conversations.ErrSuggestDisabled, wire{status: 400, code: "bad_request", msg: "Suggested Questions Is Disabled."}},
		"conversations.ErrVariableNotFound":     {conversations.ErrVariableNotFound, wire{status: 404, code: "not_found", msg: "Conversation Variable Not Exists."}},
		"conversations.ErrLastVariableNotFound": {conversations.ErrLastVariableNotFound, invalid("Last Conversation Variable Not Exists.")},
		"conversations.ErrInvalidValue": {fmt.Errorf("conversations: new value of x: %w: %w", conversations.ErrInvalidValue, errors.New("value: JSON nested deeper than 1000 levels")),
			invalid(conversations.ErrInvalidValue.Error())},
		"conversations.VariableNameError": {&conversations.VariableNameError{Msg: "Variable name contains invalid characters: sp_"}, invalid("Variable name contains invalid characters: sp_")},
		"conversations.VariableTypeError": {&conversations.VariableTypeError{Name: "turns", Expected: "number", Got: "string"},
			wire{status: 400, code: "bad_request", msg: "Type mismatch: variable 'turns' expects number, but got string type"}},

		"extract.Error":              {&extract.Error{Kind: extract.KindCorrupt, Message: "The PDF file is damaged."}, invalid("The PDF file is damaged.")},
		"extract.ErrUnsupportedType": {&extract.Error{Kind: extract.KindUnsupported, Message: "Legacy .xls files are not supported."}, invalid("Legacy .xls files are not supported.")},

		"files.ErrUnsupportedType":        {files.ErrUnsupportedType, wire{status: 415, code: "unsupported_file_type", msg: "File type not allowed."}},
		"files.ErrFilenameMissing":        {files.ErrFilenameMissing, wire{status: 400, code: "filename_not_exists_error", msg: "The specified filename does not exist."}},
		"files.ErrInvalidFilename":        {files.ErrInvalidFilename, invalid("Filename contains invalid characters")},
		"files.ErrExtensionNotAllowed":    {&files.ExtensionNotAllowedError{Extension: "exe"}, invalid("File extension '.exe' is not allowed for security reasons")},
		"files.ExtensionNotAllowedError":  {&files.ExtensionNotAllowedError{Extension: "bat"}, invalid("File extension '.bat' is not allowed for security reasons")},
		"files.ErrTooLarge":               {tooLarge, wire{status: 413, code: "file_too_large", msg: "File size exceeded. The limit is 10 MB."}},
		"files.TooLargeError":             {tooLarge, wire{status: 413, code: "file_too_large", msg: "File size exceeded. The limit is 10 MB."}},
		"files.ErrFileNotFound":           {files.ErrFileNotFound, invalid("Invalid upload file id.")},
		"files.ErrBadSignature":           {files.ErrBadSignature, wire{status: 403, code: "forbidden", msg: "Invalid request."}},
		"files.ErrInvalidURL":             {fmt.Errorf("files: fetch: %w", files.ErrInvalidURL), invalid(files.MsgInvalidURL)},
		"files.ErrRemoteForbidden":        {fmt.Errorf("%w: 10.0.0.1", files.ErrRemoteForbidden), invalid(files.MsgRemoteRefused)},
		"files.ErrRemoteFetch":            {fmt.Errorf("files: fetch http://10.0.0.1/a: %w", files.ErrRemoteFetch), invalid(files.MsgRemoteNotFetch)},
		"files.StatusError":               {&files.StatusError{StatusCode: 404}, invalid(files.MsgRemoteNotFetch)},
		"knowledge.Error":                 {kerr(knowledge.KindInvalid, "Content is empty"), invalid("Content is empty")},
		"knowledge.ErrDatasetNotFound":    {knowledge.ErrDatasetNotFound, wire{status: 404, code: "not_found", msg: "Dataset not found."}},
		"knowledge.ErrAPIDisabled":        {knowledge.ErrAPIDisabled, wire{status: 403, code: "forbidden", msg: "Dataset api access is not enabled."}},
		"knowledge.ErrDocumentNotFound":   {knowledge.ErrDocumentNotFound, wire{status: 404, code: "not_found", msg: "Document not found."}},
		"knowledge.ErrSegmentNotFound":    {knowledge.ErrSegmentNotFound, wire{status: 404, code: "not_found", msg: "Segment not found."}},
		"knowledge.ErrChildNotFound":      {knowledge.ErrChildNotFound, wire{status: 404, code: "not_found", msg: "Child chunk not found."}},
		"knowledge.ErrNameDuplicate":      {knowledge.ErrNameDuplicate, wire{status: 409, code: "dataset_name_duplicate", msg: "The dataset name already exists. Please modify your dataset name."}},
		"knowledge.ErrDatasetInUse":       {knowledge.ErrDatasetInUse, wire{status: 409, code: "dataset_in_use", msg: "The dataset is being used by some apps. Please remove the dataset from the apps before deleting it."}},
		"knowledge.ErrArchived":           {knowledge.ErrArchived, wire{status: 403, code: "archived_document_immutable", msg: "The archived document is not editable."}},
		"knowledge.ErrNotAvailable":       {knowledge.ErrNotAvailable, invalid("Document is not available")},
		"knowledge.ErrNotInitialized":     {knowledge.ErrNotInitialized, wire{status: 400, code: "dataset_not_initialized", msg: "The dataset is still being initialized or indexing. Please wait a moment."}},
		"knowledge.ErrNoEmbeddingModel":   {knowledge.ErrNoEmbeddingModel, wire{status: 400, code: "provider_not_initialize", msg: "No Embedding Model available. Please configure a valid provider in the Settings -> Model Provider."}},
		"knowledge.ErrInvalidAction":      {knowledge.ErrInvalidAction, wire{status: 400, code: "invalid_action", msg: "Invalid action."}},
		"knowledge.ErrTechniqueRequired":  {knowledge.ErrTechniqueRequired, invalid("indexing_technique is required.")},
		"knowledge.ErrProcessRuleNeeded":  {knowledge.ErrProcessRuleNeeded, invalid("process_rule is required.")},
		"knowledge.ErrInvalidDocForm":     {knowledge.ErrInvalidDocForm, invalid("Invalid doc_form.")},
		"knowledge.KindInvalid":           {kerr(knowledge.KindInvalid, "Invalid action."), invalid("Invalid action.")},
		"knowledge.KindNotFound":          {kerr(knowledge.KindNotFound, "Tag not found."), wire{status: 404, code: "not_found", msg: "Tag not found."}},
		"knowledge.KindAPIDisabled":       {kerr(knowledge.KindAPIDisabled, "m"), wire{status: 403, code: "forbidden", msg: "m"}},
		"knowledge.KindNameDuplicate":     {kerr(knowledge.KindNameDuplicate, "m"), wire{status: 409, code: "dataset_name_duplicate", msg: "m"}},
		"knowledge.KindInUse":             {kerr(knowledge.KindInUse, "m"), wire{status: 409, code: "dataset_in_use", msg: "m"}},
		"knowledge.KindArchived":          {kerr(knowledge.KindArchived, "m"), wire{status: 403, code: "archived_document_immutable", msg: "m"}},
		"knowledge.KindNotInitialized":    {kerr(knowledge.KindNotInitialized, "m"), wire{status: 400, code: "dataset_not_initialized", msg: "m"}},
		"knowledge.KindNoEmbeddingModel":  {kerr(knowledge.KindNoEmbeddingModel, "m"), wire{status: 400, code: "provider_not_initialize", msg: "m"}},
		"knowledge.KindInvalidAction":     {kerr(knowledge.KindInvalidAction, "Document: a.txt is not completed."), wire{status: 400, code: "invalid_action", msg: "Document: a.txt is not completed."}},
		"knowledge.KindExternalRequest":   {kerr(knowledge.KindExternalRequest, "m"), wire{status: 400, code: "external_knowledge_request_error", msg: "m"}},
		"knowledge.ErrExternalDataset":    {knowledge.ErrExternalDataset, invalid(knowledge.ErrExternalDataset.Message)},
		"knowledge.ErrKnowledgeNotFound":  {knowledge.ErrKnowledgeNotFound, wire{status: 404, code: "not_found", msg: "The knowledge does not exist."}},
		"models.ErrUnknownType":           {fmt.Errorf("%w %q", models.ErrUnknownType, "chat"), invalid(`unknown model type "chat"`)},
		"models.ErrProviderNotFound":      {models.ErrProviderNotFound, wire{status: 400, code: "provider_not_initialize", msg: msgProviderNotInit}},
		"models.ErrProviderNotConfigured": {models.ErrProviderNotConfigured, wire{status: 400, code: "provider_not_initialize", msg: msgProviderNotInit}},
		"models.UnusableError": {
			func() error {
				_, err := models.NewCatalog([]config.Provider{{Name: "openai", APIKeyEnv: "OPENAI_API_KEY", RequiresAPIKey: true}}, nil).
					Lookup(models.TypeLLM, "openai", "gpt-4o-mini")
				return err
			}(),
			wire{status: 400, code: "provider_not_initialize", msg: `Model provider "openai" is not usable: its API key variable OPENAI_API_KEY is not set: ` +
				"set the environment variable OPENAI_API_KEY to the provider's API key (or requires_api_key: false in the config file for a server that needs none), then restart Parley."}},
		"models.ErrModelNotFound": {models.ErrModelNotFound, wire{status: 400, code: "model_currently_not_support", msg: msgModelNotSupported}},

		"providers.Error":           {providers.NewError("openai", providers.KindInvocation, 500, "upstream error", nil), wire{status: 400, code: "completion_request_error", msg: "[openai] upstream error"}},
		"providers.ErrTruncated":    {providers.NewError("openai", providers.KindInvocation, 0, "stream ended early", providers.ErrTruncated), wire{status: 400, code: "completion_request_error", msg: "[openai] stream ended early"}},
		"providers.ErrTimeout":      {providers.NewError("openai", providers.KindInvocation, 0, "timed out", providers.ErrTimeout), wire{status: 400, code: "completion_request_error", msg: "[openai] timed out"}},
		"providers.KindCredentials": {providers.NewError("openai", providers.KindCredentials, 401, "Incorrect API key", nil), wire{status: 400, code: "provider_not_initialize", msg: "[openai] Incorrect API key"}},
		"providers.KindQuota":       {providers.NewError("openai", providers.KindQuota, 429, "quota", nil), wire{status: 400, code: "provider_quota_exceeded", msg: "[openai] quota"}},
		"providers.KindModel":       {providers.NewError("openai", providers.KindModel, 404, "no such model", nil), wire{status: 400, code: "model_currently_not_support", msg: "[openai] no such model"}},
		"providers.KindInvocation":  {providers.NewError("openai", providers.KindInvocation, 502, "bad gateway", nil), wire{status: 400, code: "completion_request_error", msg: "[openai] bad gateway"}},

		"workflow/chatflow.ErrWorkflowIDInvalid": {chatflow.ErrWorkflowIDInvalid, wire{status: 400, code: "bad_request", msg: "Invalid workflow_id format: expected a UUID."}},
		"workflow/chatflow.ErrVersionExecutionNotAllowed": {chatflow.ErrVersionExecutionNotAllowed, wire{status: 403, code: "workflow_version_execution_not_allowed",
			msg: "Workflow version execution is not allowed on this server: leave workflow_id empty to run the latest published version."}},
		"workflow/chatflow.ErrDraftWorkflow": {chatflow.ErrDraftWorkflow, wire{status: 400, code: "bad_request",
			msg: "Cannot use draft workflow version. Please use a published workflow version or leave workflow_id empty."}},
		"workflow/chatflow.ErrWorkflowNotFound": {chatflow.ErrWorkflowNotFound, wire{status: 404, code: "not_found", msg: "Workflow not found with id."}},
		"workflow/chatflow.ErrNotPublished":     {chatflow.ErrNotPublished, invalid("Workflow not published")},
		"workflow/chatflow.RunFailedError":      {&chatflow.RunFailedError{Msg: "node llm (LLM): boom"}, invalid("Run failed: node llm (LLM): boom")},
		"workflow/chatflow.InvalidGraphError": {&chatflow.InvalidGraphError{Problems: []workflow.Problem{{NodeID: "c", Type: "code", Msg: "not supported"}}},
			invalid("the app's workflow cannot run: node c (code): not supported")},
		"workflow/chatflow.ErrTriggeredOnly": {chatflow.ErrTriggeredOnly,
			invalid("This workflow starts from triggers (webhook, schedule), not from a user input form: it runs when a trigger fires.")},

		"triggers.ErrWebhookNotFound": {fmt.Errorf("%w: x", triggers.ErrWebhookNotFound), wire{status: 404, code: "not_found", msg: "Webhook not found."}},
		"triggers.ErrWebhookPaused":   {triggers.ErrWebhookPaused, wire{status: 404, code: "not_found", msg: "Webhook trigger is disabled."}},
		"triggers.RequestError": {&triggers.RequestError{Status: 400, Message: "Required parameter missing: name"},
			wire{status: 400, code: "bad_request", msg: "Required parameter missing: name"}},

		"segment.ValidationError":           {&segment.ValidationError{Message: "Custom rule is required."}, invalid("Custom rule is required.")},
		"segment.LengthError":               {&segment.LengthError{Max: 4000, Got: 5000}, invalid("Custom segment length should be between 50 and 4000.")},
		"segment.OverlapError":              {&segment.OverlapError{Overlap: 200, Size: 100}, invalid("Got a larger chunk overlap (200) than chunk size (100), should be smaller.")},
		"segment.ErrNoSubchunkSegmentation": {segment.ErrNoSubchunkSegmentation, invalid("No subchunk segmentation found in rules.")},

		"workflow.FormDataError": {&workflow.FormDataError{Msg: `unknown action "x"`},
			wire{status: 400, code: "invalid_form_data", msg: `unknown action "x"`}},
		"workflow/humaninput.ErrFormNotFound":  {humaninput.ErrFormNotFound, wire{status: 404, code: "not_found", msg: "Form not found"}},
		"workflow/humaninput.ErrRunNotFound":   {humaninput.ErrRunNotFound, wire{status: 404, code: "not_found", msg: "Workflow run not found"}},
		"workflow/humaninput.ErrFormSubmitted": {humaninput.ErrFormSubmitted, wire{status: 412, code: "human_input_form_submitted", msg: "This form has already been submitted."}},
		"workflow/humaninput.ErrFormExpired":   {humaninput.ErrFormExpired, wire{status: 412, code: "human_input_form_expired", msg: "This form has expired."}},
	}
}

// internalFailures are the exported errors under internal/ that no client causes and that are
// answered 500 on purpose (logged with their types); each says why.
func internalFailures() map[string]struct {
	err error
	why string
} {
	type entry = struct {
		err error
		why string
	}
	const cliOnly = "raised only by the apps commands of the CLI (import, publish, delete); no route returns it"
	const mcpOnly = "answered as a JSON-RPC error by the MCP endpoint (mcp.go), never by an API route"
	const nodeFailure = "fails a workflow node; the run reports it inside a *chatflow.RunFailedError (or a node's error strategy handles it)"
	return map[string]entry{
		"apps.ErrConfigApp":                        {apps.ErrConfigApp, cliOnly},
		"apps.ErrInvalid":                          {apps.ErrInvalid, cliOnly},
		"apps.ErrNameTaken":                        {apps.ErrNameTaken, cliOnly},
		"apps/dsl.Error":                           {&dsl.Error{}, cliOnly},
		"tools.ErrUnknownTool":                     {tools.ErrUnknownTool, "an agent reports an unknown or unavailable tool to the model as the observation"},
		"agent.ErrMaxIterations":                   {agent.ErrMaxIterations, "as Dify's AgentMaxIterationError, a plain failure: the stream ends with error internal_server_error"},
		"llm.ErrMaxRounds":                         {llm.ErrMaxRounds, "the agent loop's; a Legacy Agent reports it as agent.ErrMaxIterations, a workflow agent node as a node failure"},
		"tools.ErrBadArguments":                    {tools.ErrBadArguments, "reported to the model as the observation, never returned to a handler"},
		"tools.ErrNoFile":                          {tools.ErrNoFile, "a file tool called without its file answers so, as the tool's failed answer; never returned to a handler"},
		"netguard.ErrForbidden":                    {netguard.ErrForbidden, "the files service translates it into files.ErrRemoteForbidden; tools report it to the model"},
		"tools/toolreg.ErrInvalid":                 {toolreg.ErrInvalid, "raised only by the tools commands of the CLI (add-api, add-mcp, refresh, delete); no route returns it"},
		"tools/toolreg.ErrExists":                  {toolreg.ErrExists, "raised only by the tools commands of the CLI; no route returns it"},
		"tools/toolreg.ErrNotFound":                {toolreg.ErrNotFound, "raised only by the tools commands of the CLI (refresh, delete); an agent's lookup reports a missing provider as tools.ErrUnknownTool"},
		"tools/openapi.ErrInvalidDocument":         {openapi.ErrInvalidDocument, "API tool providers are registered from the CLI or config, not through a route; no handler returns it yet"},
		"blob.ErrNotFound":                         {blob.ErrNotFound, "storage; the files service turns a missing blob into files.ErrFileNotFound"},
		"blob.ErrTooLarge":                         {blob.ErrTooLarge, "storage; the files service turns it into a *files.TooLargeError"},
		"blob.ErrInvalidKey":                       {blob.ErrInvalidKey, "a key the server built itself"},
		"store.ErrLeaseLost":                       {store.ErrLeaseLost, "a background job's worker lost its lease (another replica took the job over); the job is cancelled and nothing is recorded, no request sees it"},
		"run.ErrStopped":                           {run.ErrStopped, "a stopped run ends with message_end, never as an error"},
		"run.ErrNoEnd":                             {run.ErrNoEnd, "a workflow run's events ending without its end is the engine's bug; a blocking reply answers it 500"},
		"run.ErrOutputModerated":                   {run.ErrOutputModerated, "an answer output moderation replaced ends with message_end, never as an error"},
		"moderation.ErrInvalid":                    {moderation.ErrInvalid, "an import refuses a rule that cannot run (a dsl.Error); only an app stored by other means could carry one"},
		"config.FieldError":                        {&config.FieldError{Path: "apps.0.mode", Message: "unknown mode"}, "config loading, before the server serves"},
		"jobs.ErrQueueFull":                        {jobs.ErrQueueFull, "the knowledge service logs it and leaves the document waiting"},
		"jobs.ErrUnknownKind":                      {jobs.ErrUnknownKind, "wiring bug"},
		"jobs.ErrClosed":                           {jobs.ErrClosed, "shutdown; the knowledge service leaves the document waiting"},
		"limiter.ErrLimitExceeded":                 {limiter.ErrLimitExceeded, "chat turns it into a *run.LimitError, which names what the 429 message needs"},
		"store.ErrNotFound":                        {store.ErrNotFound, "storage; each domain package turns it into its own not-found sentinel"},
		"store.ErrConflict":                        {store.ErrConflict, "storage; each domain package turns it into its own outcome"},
		"store.ErrCursorNotFound":                  {store.ErrCursorNotFound, "storage; conversations turns it into ErrLastNotFound/ErrFirstNotFound"},
		"tasks.ErrStopped":                         {tasks.ErrStopped, "a stopped run ends with message_end, never as an error"},
		"vectorindex.ErrDimensionMismatch":         {vectorindex.ErrDimensionMismatch, "vectors the server computed itself disagree: a changed embedding model, not a request"},
		"vectorindex.ErrInvalidQuery":              {vectorindex.ErrInvalidQuery, "a query vector the server computed itself"},
		"workflow.ErrInvalidGraph":                 {workflow.ErrInvalidGraph, "the chatflow runner reports a graph that cannot run as a *chatflow.InvalidGraphError; the import as its own problems"},
		"workflow.NodeError":                       {&workflow.NodeError{Type: "x", Err: errors.New("x")}, "a node's failure; a failed run reports it inside a *chatflow.RunFailedError"},
		"workflow/chatflow.ErrFilesNotAccepted":    {chatflow.ErrFilesNotAccepted, "wiring: the server always gives the Chatflow runner file support"},
		"workflow.Pause":                           {&workflow.Pause{}, "a human-input node pausing the run; the engine parks the node, it never reaches a client"},
		"workflow/chatflow.ErrNotPaused":           {chatflow.ErrNotPaused, "a resumption of a run whose pause is gone; the resumer logs it and releases the run"},
		"workflow/condition.ErrInvalid":            {condition.ErrInvalid, nodeFailure},
		"workflow/listop.ErrInvalid":               {listop.ErrInvalid, nodeFailure},
		"workflow/template/jinja.ErrOutputTooLong": {jinja.ErrOutputTooLong, nodeFailure},
		"workflow/template/jinja.ErrRender":        {jinja.ErrRender, nodeFailure},
		"workflow/template/jinja.ErrSyntax":        {jinja.ErrSyntax, nodeFailure},
		"workflow/template/jinja.ErrTimeout":       {jinja.ErrTimeout, nodeFailure},
		"workflow/httpreq.ConfigError":             {&httpreq.ConfigError{}, nodeFailure},
		"workflow/httpreq.Error":                   {&httpreq.Error{}, nodeFailure},
		"workflow/sandbox.ErrUnavailable":          {sandbox.ErrUnavailable, nodeFailure},
		"workflow/sandbox.Error":                   {&sandbox.Error{}, nodeFailure},
		"mcpserver.ErrServerNotFound":              {mcpserver.ErrServerNotFound, mcpOnly},
		"mcpserver.ErrServerInactive":              {mcpserver.ErrServerInactive, mcpOnly},
		"mcpserver.ErrAppUnavailable":              {mcpserver.ErrAppUnavailable, mcpOnly},
		"mcpserver.ArgumentError":                  {&mcpserver.ArgumentError{}, mcpOnly},
		"mcpserver.RunError":                       {&mcpserver.RunError{Err: errors.New("x")}, "wraps a run's failure for the MCP endpoint, which maps the failure inside (mapError unwraps it)"},
		"mcpserver.ErrNoServer":                    {mcpserver.ErrNoServer, "raised only by the apps mcp command of the CLI; no route returns it"},
		"sites.ErrConfigSet":                       {sites.ErrConfigSet, "raised only by the apps site command of the CLI; no route returns it"},
		"triggers.ErrTriggerNotFound":              {triggers.ErrTriggerNotFound, "raised only by the apps triggers command of the CLI; no route returns it"},
		"store.ErrTickTaken":                       {store.ErrTickTaken, "another replica claimed a schedule's tick first; the scheduler skips it, no request sees it"},
		"workflow/chatflow.ErrTriggerGone":         {chatflow.ErrTriggerGone, "a trigger's queued run whose node left the published graph; the job drops it with a warning, no request sees it"},
	}
}

// TestEveryDomainErrorIsClassified reads the source of internal/ and fails when an exported
// sentinel error (var Err…), error type, or kind of an error type's Kind field is in neither
// domainOutcomes nor internalFailures: adding one forces a decision about its answer, and a
// domain outcome cannot end as a 500 because its mapping was forgotten.
func TestEveryDomainErrorIsClassified(t *testing.T) {
	declared := declaredErrors(t, filepath.Join("..", "internal"))
	domain, internal := domainOutcomes(), internalFailures()
	// The failures to reach a dependency are neither: they answer 503 (unavailable_test.go).
	for name, o := range unavailableOutcomes() {
		domain[name] = o
	}
	for name := range domain {
		if _, ok := internal[name]; ok {
			t.Errorf("%s is both a domain outcome and an internal failure", name)
		}
	}
	for _, name := range declared {
		_, isDomain := domain[name]
		_, isInternal := internal[name]
		if !isDomain && !isInternal {
			t.Errorf("%s is not classified: map it in errmap.go and add it to domainOutcomes, or add it to internalFailures with the reason it is a 500", name)
		}
	}
	for name := range domain {
		if !slices.Contains(declared, name) {
			t.Errorf("domainOutcomes names %s, which internal/ no longer declares", name)
		}
	}
	for name := range internal {
		if !slices.Contains(declared, name) {
			t.Errorf("internalFailures names %s, which internal/ no longer declares", name)
		}
	}
	// The scanner itself must see what it is meant to: one of each shape.
	for _, name := range []string{"knowledge.ErrDatasetNotFound", "files.TooLargeError", "knowledge.KindNotFound", "providers.KindQuota"} {
		if !slices.Contains(declared, name) {
			t.Fatalf("scanner missed %s; found %v", name, declared)
		}
	}
}

// TestDomainErrorsMapOnce checks each domain outcome's answer, the same whether the handler
// returns the error as it came or wrapped with context, and never a 5xx. Where the error carries
// a client-safe message, the answer shows exactly that message (the classification the knowledge
// indexer and a run's stored error use too).
func TestDomainErrorsMapOnce(t *testing.T) {
	for name, o := range domainOutcomes() {
		t.Run(name, func(t *testing.T) {
			for _, err := range []error{o.err, fmt.Errorf("handler context: %w", o.err)} {
				got := mapError(err)
				if got.Status != o.want.status || got.Code != o.want.code || got.Message != o.want.msg {
					t.Fatalf("mapError(%v) = %d %s %q, want %d %s %q", err, got.Status, got.Code, got.Message, o.want.status, o.want.code, o.want.msg)
				}
				if got.Status >= 500 {
					t.Fatalf("a domain outcome answered %d", got.Status)
				}
				if msg, ok := safeerr.Message(err); ok && msg != got.Message {
					t.Fatalf("safe message %q, answered %q", msg, got.Message)
				}
				if !errors.Is(got, err) {
					t.Fatalf("the answer lost its cause for the log")
				}
			}
		})
	}
}

// TestInternalFailuresAre500 keeps internalFailures honest: each entry really is a 500, with the
// generic message. One that gets a mapping moves to domainOutcomes.
func TestInternalFailuresAre500(t *testing.T) {
	for name, f := range internalFailures() {
		if f.why == "" {
			t.Errorf("%s: no reason given", name)
		}
		got := mapError(fmt.Errorf("context: %w", f.err))
		if got.Status != http.StatusInternalServerError || got.Code != "internal_server_error" || got.Message != msgInternal {
			t.Errorf("%s maps to %d %s %q; move it to domainOutcomes", name, got.Status, got.Code, got.Message)
		}
	}
}

// TestUnmappedKnowledgeKindIs500 pins the fallback for a knowledge error of a kind errmap.go does
// not know: a 500 with the generic message, never the error's own text.
func TestUnmappedKnowledgeKindIs500(t *testing.T) {
	got := mapError(&knowledge.Error{Kind: "brand_new", Message: "secret detail"})
	if got.Status != 500 || got.Message != msgInternal {
		t.Fatalf("got %d %q", got.Status, got.Message)
	}
}

// TestCreateByFileRefusesTypeAsInvalidParam pins the one per-operation exception.
func TestCreateByFileRefusesTypeAsInvalidParam(t *testing.T) {
	err := fmt.Errorf("document file %q: %w", "a.zip", files.ErrUnsupportedType)
	for op, want := range map[string]wire{
		"CreateDocumentByFile":       invalid("File type not allowed."),
		"CreateDocumentByFileLegacy": invalid("File type not allowed."),
		"UpdateDocumentByFile":       {status: 415, code: "unsupported_file_type", msg: "File type not allowed."},
		"":                           {status: 415, code: "unsupported_file_type", msg: "File type not allowed."},
	} {
		got := forOperation(op, mapError(err))
		if got.Status != want.status || got.Code != want.code || got.Message != want.msg {
			t.Errorf("%q: %d %s %q", op, got.Status, got.Code, got.Message)
		}
	}
}

// TestHandlerReturningDomainErrorIsMapped is a handler that does not map its error at all: it
// returns the domain package's error wrapped with context, and the client still gets its 404,
// not a 500.
func TestHandlerReturningDomainErrorIsMapped(t *testing.T) {
	f := newFixture(t, ValidationEnforce)
	f.e.GET("/v1/datasets/:dataset_id", func(c echo.Context) error {
		return fmt.Errorf("get dataset %s: %w", c.Param("dataset_id"), knowledge.ErrDatasetNotFound)
	})
	rec := f.do("GET", "/v1/datasets/7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11", f.kbKey, "", "")
	if rec.Code != http.StatusNotFound {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if code, msg := decodeErr(t, rec); code != "not_found" || msg != "Dataset not found." {
		t.Fatalf("%s %q", code, msg)
	}
	if f.srv.Violations() != 0 {
		t.Fatalf("violations = %d", f.srv.Violations())
	}
}

type mysteryError struct{}

func (mysteryError) Error() string { return "something nobody mapped" }

// TestUnmappedErrorLogsItsTypes: an error nothing maps is a 500 whose log line names the types
// along its chain, so the missing mapping is easy to find.
func TestUnmappedErrorLogsItsTypes(t *testing.T) {
	f := newFixture(t, ValidationEnforce)
	var logs bytes.Buffer
	f.srv.log = slog.New(slog.NewTextHandler(&logs, nil))
	f.e.GET("/v1/datasets/:dataset_id", func(c echo.Context) error {
		return fmt.Errorf("get dataset: %w", mysteryError{})
	})
	rec := f.do("GET", "/v1/datasets/7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11", f.kbKey, "", "")
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("status %d", rec.Code)
	}
	if code, msg := decodeErr(t, rec); code != "internal_server_error" || msg != msgInternal {
		t.Fatalf("%s %q", code, msg)
	}
	if !strings.Contains(logs.String(), "error_types=") || !strings.Contains(logs.String(), "server.mysteryError") {
		t.Fatalf("log does not name the error's types: %s", logs.String())
	}
}

// declaredErrors lists, as "pkg.Name" with pkg the package's path under root, the exported
// package-level vars named Err…, the exported types with an Error() string method, and the
// exported constants of the type of such an error type's Kind field. Test helper packages
// (…test) are skipped.
func declaredErrors(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if d.Name() == "testdata" || (path != root && strings.HasSuffix(d.Name(), "test")) {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		names, err := declaredInDir(path)
		if err != nil {
			return err
		}
		for _, n := range names {
			out = append(out, filepath.ToSlash(rel)+"."+n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func declaredInDir(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, f)
	}
	var names []string
	errorTypes := map[string]bool{}
	structs := map[string]*ast.StructType{}
	constsOfType := map[string][]string{}
	for _, f := range parsed {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || d.Name.Name != "Error" || d.Type.Params.NumFields() != 0 ||
					d.Type.Results.NumFields() != 1 || types(d.Type.Results.List[0].Type) != "string" {
					continue
				}
				if recv := types(d.Recv.List[0].Type); ast.IsExported(recv) {
					errorTypes[recv] = true
				}
			case *ast.GenDecl:
				var lastType string
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if st, ok := s.Type.(*ast.StructType); ok {
							structs[s.Name.Name] = st
						}
					case *ast.ValueSpec:
						switch {
						case s.Type != nil:
							lastType = types(s.Type)
						case len(s.Values) > 0:
							lastType = ""
						}
						for _, n := range s.Names {
							if !n.IsExported() {
								continue
							}
							if d.Tok == token.VAR && strings.HasPrefix(n.Name, "Err") {
								names = append(names, n.Name)
							}
							if d.Tok == token.CONST && lastType != "" {
								constsOfType[lastType] = append(constsOfType[lastType], n.Name)
							}
						}
					}
				}
			}
		}
	}
	for typ := range errorTypes {
		names = append(names, typ)
		st, ok := structs[typ]
		if !ok {
			continue
		}
		for _, field := range st.Fields.List {
			for _, n := range field.Names {
				if n.Name == "Kind" {
					names = append(names, constsOfType[types(field.Type)]...)
				}
			}
		}
	}
	return names, nil
}

// types names a type expression: "T" for T and *T, "string" for string.
func types(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.StarExpr:
		return types(x.X)
	}
	return ""
}
