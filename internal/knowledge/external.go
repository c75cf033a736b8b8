package knowledge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/netguard"
	"github.com/parleyhq/parley/internal/store"
)

// External knowledge bases (Dify's provider `external`) keep no documents: every retrieval from
// one calls its external knowledge API, a service that answers Dify's External Knowledge API —
// POST {endpoint}/retrieval with a bearer key and {knowledge_id, query, retrieval_setting,
// metadata_condition}, answered with {records: [{content, score, title, metadata}]} — and the
// records become the same Records a local search gives (retrieveExternal). Retrieve is the one
// place that sends them there, for every caller: hit testing, chat apps, Chatflow and Workflow
// knowledge-retrieval nodes, and agents' knowledge tools. docs/external-knowledge.md.

// Bounds of a call to an external knowledge API.
const (
	// DefaultExternalTimeout bounds one call, the reply read in full, when Options says nothing
	// (PARLEY_EXTERNAL_KNOWLEDGE_TIMEOUT).
	DefaultExternalTimeout = 10 * time.Second
	// MaxExternalResponseBytes is the largest reply read; a larger one is an error.
	MaxExternalResponseBytes = 8 << 20
	// maxExternalErrorText bounds the text of the service's own error message quoted to clients.
	maxExternalErrorText = 200
)

// DefaultExternalTopK is the top_k of an external knowledge base that names none (Dify's).
const DefaultExternalTopK = 2

// ExternalSetting is the retrieval setting of an external knowledge base (Dify's
// external_retrieval_model), stored as its retrieval_model.
type ExternalSetting struct {
	TopK                  int     `json:"top_k"`
	ScoreThreshold        float64 `json:"score_threshold"`
	ScoreThresholdEnabled bool    `json:"score_threshold_enabled"`
}

// parseExternalSetting reads an external setting (or a retrieval_model, whose members of these
// names mean the same) over the defaults; null or absent members keep them.
func parseExternalSetting(raw json.RawMessage) (ExternalSetting, error) {
	out := ExternalSetting{TopK: DefaultExternalTopK}
	if len(raw) == 0 || string(raw) == "null" {
		return out, nil
	}
	var in struct {
		TopK                  *int     `json:"top_k"`
		ScoreThreshold        *float64 `json:"score_threshold"`
		ScoreThresholdEnabled *bool    `json:"score_threshold_enabled"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return out, invalidParam(fmt.Sprintf("external_retrieval_model is invalid: %v", err))
	}
	if in.TopK != nil && *in.TopK > 0 {
		out.TopK = *in.TopK
	}
	if in.ScoreThreshold != nil {
		out.ScoreThreshold = *in.ScoreThreshold
	}
	if in.ScoreThresholdEnabled != nil {
		out.ScoreThresholdEnabled = *in.ScoreThresholdEnabled
	}
	if out.TopK > config.MaxExternalTopK {
		return out, invalidParam(fmt.Sprintf("top_k of an external knowledge base cannot exceed %d", config.MaxExternalTopK))
	}
	if math.IsNaN(out.ScoreThreshold) || out.ScoreThreshold < 0 || out.ScoreThreshold > 1 {
		return out, invalidParam("score_threshold must be between 0 and 1")
	}
	return out, nil
}

// threshold is the score_threshold sent: 0 when the threshold is off, as Dify sends it.
func (e ExternalSetting) threshold() float64 {
	if !e.ScoreThresholdEnabled {
		return 0
	}
	return e.ScoreThreshold
}

// ExternalRecord is what an external knowledge API answered for one record of a Record, beside
// the chunk and document the record is mapped to.
type ExternalRecord struct {
	Title string
	// Metadata is the record's metadata object (empty, never nil, when it sent none).
	Metadata map[string]any
}

// externalRequest is the body of POST {endpoint}/retrieval.
type externalRequest struct {
	KnowledgeID      string `json:"knowledge_id"`
	Query            string `json:"query"`
	RetrievalSetting struct {
		TopK           int     `json:"top_k"`
		ScoreThreshold float64 `json:"score_threshold"`
	} `json:"retrieval_setting"`
	// MetadataCondition is left out when there is none (Dify's fix for services that read a
	// null as "no match").
	MetadataCondition *MetadataFilter `json:"metadata_condition,omitempty"`
}

// externalRecord is one record of a reply, read leniently: Dify itself does not refuse a record
// without a member.
type externalRecord struct {
	Content  *string        `json:"content"`
	Score    *float64       `json:"score"`
	Title    *string        `json:"title"`
	Metadata map[string]any `json:"metadata"`
}

// externalFailure is a retrieval from an external knowledge base that failed; msg says how,
// for the client.
func externalFailure(d store.Dataset, api store.ExternalKnowledgeAPI, msg string, cause error) *Error {
	name := api.Name
	if name == "" {
		name = d.ExternalKnowledgeAPIID
	}
	return newError(KindExternalRequest, fmt.Sprintf("External knowledge base %q: its external knowledge API %q %s", d.Name, name, msg)).withCause(cause)
}

// retrieveExternal retrieves from one external knowledge base with its setting es and the
// metadata filter (nil: none), and maps the records its API answers to Records, best first.
// Any failure — no key, a refused or failed connection, a timeout, a non-2xx status, an
// {error_code, error_msg} reply, a reply too large or not the API's shape — is a
// KindExternalRequest error that names the knowledge base and says what went wrong.
func (s *Service) retrieveExternal(ctx context.Context, d store.Dataset, query string, es ExternalSetting, filter *MetadataFilter) ([]Record, error) {
	api, err := s.st.ExternalKnowledgeAPI(ctx, d.ExternalKnowledgeAPIID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, externalFailure(d, api, "no longer exists: bind the knowledge base to another one", err)
	}
	if err != nil {
		return nil, fmt.Errorf("knowledge: external knowledge api of %s: %w", d.ID, err)
	}
	recs, err := s.callExternal(ctx, d, api, query, es, filter)
	if err != nil && ctx.Err() == nil {
		s.log.WarnContext(ctx, "external knowledge retrieval failed", "dataset", d.ID, "external_knowledge_api", api.Name,
			"endpoint", api.Endpoint, "error", err)
	}
	return recs, err
}

func (s *Service) callExternal(ctx context.Context, d store.Dataset, api store.ExternalKnowledgeAPI, query string, es ExternalSetting, filter *MetadataFilter) ([]Record, error) {
	key := strings.TrimSpace(s.getenv(api.APIKeyEnv))
	if key == "" {
		return nil, externalFailure(d, api, fmt.Sprintf("has no key: set the environment variable %s of the server to its API key", api.APIKeyEnv), nil)
	}
	body := externalRequest{KnowledgeID: d.ExternalKnowledgeID, Query: query}
	body.RetrievalSetting.TopK, body.RetrievalSetting.ScoreThreshold = es.TopK, es.threshold()
	if filter != nil && len(filter.Conditions) > 0 {
		body.MetadataCondition = filter
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("knowledge: external retrieval request: %w", err)
	}
	callCtx, cancel := context.WithTimeout(ctx, s.extTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(callCtx, http.MethodPost, strings.TrimRight(api.Endpoint, "/")+"/retrieval", bytes.NewReader(raw))
	if err != nil {
		return nil, externalFailure(d, api, "has an endpoint that is not a URL", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := s.extClient.Do(req)
	if err != nil {
		return nil, s.transportFailure(ctx, callCtx, d, api, err)
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, MaxExternalResponseBytes+1))
	if err != nil {
		return nil, s.transportFailure(ctx, callCtx, d, api, err)
	}
	if len(reply) > MaxExternalResponseBytes {
		return nil, externalFailure(d, api, fmt.Sprintf("sent a reply larger than %d MiB", MaxExternalResponseBytes>>20), nil)
	}
	var env struct {
		Records   json.RawMessage `json:"records"`
		ErrorCode json.RawMessage `json:"error_code"`
		ErrorMsg  any             `json:"error_msg"`
	}
	jsonErr := json.Unmarshal(reply, &env)
	apiError := ""
	if jsonErr == nil && len(env.ErrorCode) > 0 && string(env.ErrorCode) != "null" {
		apiError = "error " + clip(string(env.ErrorCode), 20)
		if msg, ok := env.ErrorMsg.(string); ok && msg != "" {
			apiError += ": " + clip(msg, maxExternalErrorText)
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("answered HTTP %d", resp.StatusCode)
		if apiError != "" {
			msg += " (" + apiError + ")"
		}
		return nil, externalFailure(d, api, msg, fmt.Errorf("%s: %.300s", resp.Status, reply))
	}
	if apiError != "" {
		return nil, externalFailure(d, api, "answered "+apiError, nil)
	}
	var records []json.RawMessage
	if jsonErr != nil || len(env.Records) == 0 || json.Unmarshal(env.Records, &records) != nil {
		cause := jsonErr
		if cause == nil {
			cause = fmt.Errorf("records: %.100s", env.Records)
		}
		return nil, externalFailure(d, api, `sent a reply that is not the External Knowledge API's {"records": [...]}`, cause)
	}
	out := make([]Record, 0, len(records))
	for i, r := range records {
		var rec externalRecord
		if err := json.Unmarshal(r, &rec); err != nil {
			return nil, externalFailure(d, api, fmt.Sprintf("sent a record (records[%d]) that is not an object of content, score, title and metadata", i), err)
		}
		if rec.Score != nil && (math.IsNaN(*rec.Score) || math.IsInf(*rec.Score, 0)) {
			return nil, externalFailure(d, api, fmt.Sprintf("sent a record (records[%d]) without a usable score", i), nil)
		}
		out = append(out, externalHit(d, rec, i+1, s.nowUTC()))
	}
	// The service is asked for top_k records above the threshold; what it sends is held to it.
	kept := out[:0]
	for _, r := range out {
		if !es.ScoreThresholdEnabled || r.Score >= es.ScoreThreshold {
			kept = append(kept, r)
		}
	}
	sortRecords(kept)
	if len(kept) > es.TopK {
		kept = kept[:es.TopK]
	}
	return kept, nil
}

// transportFailure names a call that got no reply: a guard refusal, a timeout, or a failed
// connection. A retrieval its caller cancelled returns the cancellation as it is.
func (s *Service) transportFailure(ctx, callCtx context.Context, d store.Dataset, api store.ExternalKnowledgeAPI, err error) error {
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case errors.Is(err, netguard.ErrForbidden):
		return externalFailure(d, api, "is on an internal network, which the network guard refuses "+
			"(PARLEY_EXTERNAL_KNOWLEDGE_ALLOWED_NETWORKS lets chosen networks through)", err)
	case callCtx.Err() != nil:
		return externalFailure(d, api, fmt.Sprintf("did not answer within %s", s.extTimeout), err)
	default:
		return externalFailure(d, api, "could not be reached", err)
	}
}

// clip cuts s to n characters and drops what could break a message (control characters).
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// externalNamespace is the namespace of the name-based UUIDs given to external documents and
// chunks that the service names by no UUID of its own.
var externalNamespace = uuid.MustParse("6d1b7a52-3c44-4f7e-9a51-0e6b3c0f2a91")

// externalHit maps record rec (rank-th of the reply) of external knowledge base d to a Record:
// a chunk of content in a document named by the record's title. The contract's citations name a
// document and a chunk by UUID: a record whose metadata has UUIDs as document_id and segment_id
// (a Parley provider sends its own) keeps them; otherwise each gets a UUID derived from the
// knowledge base, the title and the content, the same every time the service answers the same.
func externalHit(d store.Dataset, rec externalRecord, rank int, now time.Time) Record {
	content, title, score := deref(rec.Content), deref(rec.Title), 0.0
	if rec.Score != nil {
		score = *rec.Score
	}
	meta := rec.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	docID := uuidMember(meta, "document_id")
	if docID == "" {
		docID = uuid.NewSHA1(externalNamespace, []byte(d.ID+"\x00document\x00"+title)).String()
	}
	segID := uuidMember(meta, "segment_id")
	if segID == "" {
		segID = uuid.NewSHA1(externalNamespace, []byte(d.ID+"\x00segment\x00"+docID+"\x00"+content)).String()
	}
	position := rank
	if p, ok := meta["segment_position"].(float64); ok && p >= 1 && p == math.Trunc(p) && p <= math.MaxInt32 {
		position = int(p)
	}
	docName := title
	if docName == "" {
		docName = d.Name
	}
	sum := sha256.Sum256([]byte(content + "None"))
	docMeta, _ := json.Marshal(meta)
	return Record{
		Dataset: d,
		Document: store.Document{ID: docID, DatasetID: d.ID, Name: docName, DataSourceType: store.DatasetProviderExternal,
			DocMetadata: docMeta, Enabled: true, IndexingStatus: store.IndexingCompleted, CreatedAt: now, UpdatedAt: now},
		Segment: store.Segment{ID: segID, DocumentID: docID, DatasetID: d.ID, Position: position, Content: content,
			WordCount: utf8.RuneCountInString(content), IndexNodeID: segID, IndexNodeHash: hex.EncodeToString(sum[:]),
			Enabled: true, Status: store.SegmentCompleted, CreatedAt: now},
		Score:    score,
		External: &ExternalRecord{Title: title, Metadata: meta},
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// uuidMember is meta[key] as a canonical UUID, or "" when it is not one.
func uuidMember(meta map[string]any, key string) string {
	s, _ := meta[key].(string)
	if !isUUID(s) {
		return ""
	}
	return strings.ToLower(s)
}
