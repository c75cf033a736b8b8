package tracing

import "go.opentelemetry.io/otel/attribute"

// The attributes of Parley's spans. The gen_ai.* ones are OpenTelemetry's GenAI semantic
// conventions, which GenAI backends such as Langfuse read; http.* are its HTTP conventions;
// parley.* are Parley's own. docs/observability.md lists which span carries which.
const (
	HTTPMethod = attribute.Key("http.request.method")
	HTTPRoute  = attribute.Key("http.route")
	HTTPStatus = attribute.Key("http.response.status_code")

	GenAIOperation       = attribute.Key("gen_ai.operation.name")
	GenAIProvider        = attribute.Key("gen_ai.provider.name")
	GenAIRequestModel    = attribute.Key("gen_ai.request.model")
	GenAIRequestStream   = attribute.Key("gen_ai.request.stream")
	GenAIMaxTokens       = attribute.Key("gen_ai.request.max_tokens")
	GenAITemperature     = attribute.Key("gen_ai.request.temperature")
	GenAITopP            = attribute.Key("gen_ai.request.top_p")
	GenAIInputTokens     = attribute.Key("gen_ai.usage.input_tokens")
	GenAIOutputTokens    = attribute.Key("gen_ai.usage.output_tokens")
	GenAIFinishReasons   = attribute.Key("gen_ai.response.finish_reasons")
	GenAIFirstChunk      = attribute.Key("gen_ai.response.time_to_first_chunk")
	GenAIInputMessages   = attribute.Key("gen_ai.input.messages")
	GenAIOutputMessages  = attribute.Key("gen_ai.output.messages")
	GenAIAgentID         = attribute.Key("gen_ai.agent.id")
	GenAIAgentName       = attribute.Key("gen_ai.agent.name")
	GenAIWorkflowName    = attribute.Key("gen_ai.workflow.name")
	GenAIConversationID  = attribute.Key("gen_ai.conversation.id")
	GenAIToolName        = attribute.Key("gen_ai.tool.name")
	GenAIToolCallID      = attribute.Key("gen_ai.tool.call.id")
	GenAIToolType        = attribute.Key("gen_ai.tool.type")
	GenAIToolArguments   = attribute.Key("gen_ai.tool.call.arguments")
	GenAIToolResult      = attribute.Key("gen_ai.tool.call.result")
	GenAIDataSourceID    = attribute.Key("gen_ai.data_source.id")
	GenAIRetrievalQuery  = attribute.Key("gen_ai.retrieval.query.text")
	GenAIEmbeddingsCount = attribute.Key("gen_ai.embeddings.dimension.count")
	// GenAICost is not in the conventions; Langfuse reads it as the call's cost.
	GenAICost = attribute.Key("gen_ai.usage.cost")

	AppID          = attribute.Key("parley.app.id")
	AppName        = attribute.Key("parley.app.name")
	AppMode        = attribute.Key("parley.app.mode")
	ConversationID = attribute.Key("parley.conversation.id")
	MessageID      = attribute.Key("parley.message.id")
	TaskID         = attribute.Key("parley.task.id")
	WorkflowRunID  = attribute.Key("parley.workflow_run.id")
	RunStatus      = attribute.Key("parley.run.status")
	RunResumed     = attribute.Key("parley.run.resumed")
	// SessionID is the conversation again, under the name Langfuse groups a session's traces by.
	SessionID = attribute.Key("session.id")

	NodeID      = attribute.Key("parley.node.id")
	NodeType    = attribute.Key("parley.node.type")
	NodeTitle   = attribute.Key("parley.node.title")
	NodeStatus  = attribute.Key("parley.node.status")
	NodeRetries = attribute.Key("parley.node.retries")
	NodeIndex   = attribute.Key("parley.node.index")

	ModelCurrency = attribute.Key("parley.model.currency")
	ToolProvider  = attribute.Key("parley.tool.provider")
	ToolError     = attribute.Key("parley.tool.error")

	KnowledgeDatasets   = attribute.Key("parley.knowledge.datasets")
	KnowledgeDatasetIDs = attribute.Key("parley.knowledge.dataset_ids")
	KnowledgeMethod     = attribute.Key("parley.knowledge.method")
	KnowledgeTopK       = attribute.Key("parley.knowledge.top_k")
	KnowledgeHits       = attribute.Key("parley.knowledge.hits")

	CodeLanguage = attribute.Key("parley.code.language")
	CodeOutcome  = attribute.Key("parley.code.outcome")

	JobKind    = attribute.Key("parley.job.kind")
	JobID      = attribute.Key("parley.job.id")
	JobAttempt = attribute.Key("parley.job.attempt")
	JobOutcome = attribute.Key("parley.job.outcome")
)
