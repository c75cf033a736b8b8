package segment

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Process rule modes (docs/knowledge.md).
const (
	// ModeAutomatic uses AUTOMATIC_RULES and the recursive splitter.
	ModeAutomatic = "automatic"
	// ModeCustom uses the rule's separator, max_tokens and overlap.
	ModeCustom = "custom"
	// ModeHierarchical produces parent chunks with child chunks.
	ModeHierarchical = "hierarchical"
)

// Parent modes of a hierarchical rule.
const (
	// ParentModeParagraph splits parents with the segmentation rule.
	ParentModeParagraph = "paragraph"
	// ParentModeFullDoc makes the whole document (first FullDocMaxTokens
	// tokens) the single parent.
	ParentModeFullDoc = "full-doc"
)

// Pre-processing rule ids accepted by Dify. RuleRemoveStopwords validates
// but has no effect, as in Dify.
const (
	// RuleRemoveExtraSpaces collapses blank lines and space runs.
	RuleRemoveExtraSpaces = "remove_extra_spaces"
	// RuleRemoveURLsEmails deletes URLs and e-mail addresses.
	RuleRemoveURLsEmails = "remove_urls_emails"
	// RuleRemoveStopwords is accepted and ignored.
	RuleRemoveStopwords = "remove_stopwords"
)

// Dify's AUTOMATIC_RULES segmentation numbers (docs/knowledge.md).
const (
	// AutomaticMaxTokens is the automatic chunk size in characters.
	AutomaticMaxTokens = 500
	// AutomaticChunkOverlap is the automatic overlap in characters.
	AutomaticChunkOverlap = 50
	// AutomaticSeparator is AUTOMATIC_RULES' separator ("delimiter" in
	// Dify's constant); the automatic splitter does not use it.
	AutomaticSeparator = "\n"
)

// ProcessRule is Dify's document process_rule as sent in create/update
// document requests and echoed in responses.
type ProcessRule struct {
	// Mode is ModeAutomatic, ModeCustom or ModeHierarchical.
	Mode string `json:"mode"`
	// Rules is nil when absent; automatic mode ignores it.
	Rules *Rules `json:"rules,omitempty"`
}

// Rules is the "rules" object of a process rule.
type Rules struct {
	// PreProcessingRules is nil when the field was absent or null (which
	// validation rejects for custom and hierarchical modes); an empty
	// JSON array decodes to an empty, non-nil slice.
	PreProcessingRules []PreProcessingRule `json:"pre_processing_rules"`
	// Segmentation drives the (parent) chunk splitter.
	Segmentation *Segmentation `json:"segmentation,omitempty"`
	// ParentMode is ParentModeParagraph or ParentModeFullDoc (hierarchical
	// mode only).
	ParentMode string `json:"parent_mode,omitempty"`
	// SubchunkSegmentation drives the child chunk splitter (hierarchical
	// mode only).
	SubchunkSegmentation *Segmentation `json:"subchunk_segmentation,omitempty"`
}

// PreProcessingRule switches one cleaning step on or off.
type PreProcessingRule struct {
	// ID is one of RuleRemoveExtraSpaces, RuleRemoveURLsEmails,
	// RuleRemoveStopwords.
	ID string `json:"id"`
	// Enabled turns the step on.
	Enabled bool `json:"enabled"`
}

// Segmentation configures one splitter. Despite the name, MaxTokens and
// ChunkOverlap are measured in characters (Unicode code points), as in
// current Dify (docs/knowledge.md, "Splitting").
type Segmentation struct {
	// Separator is the fixed separator; the two-character sequence `\n`
	// is unescaped to a newline before splitting.
	Separator string `json:"separator"`
	// MaxTokens is the maximum chunk length, 50…4000.
	MaxTokens int `json:"max_tokens"`
	// ChunkOverlap is the number of characters carried over between
	// adjacent chunks of the recursive splitter.
	ChunkOverlap int `json:"chunk_overlap"`
}

// ValidationError is a process-rule validation failure. Message is Dify's
// exact text, answered as 400 invalid_param.
type ValidationError struct {
	// Message is the user-facing message.
	Message string
}

// Error implements error.
func (e *ValidationError) Error() string { return e.Message }

// SafeMessage implements safeerr.Error.
func (e *ValidationError) SafeMessage() string { return e.Message }

func invalid(msg string) error { return &ValidationError{Message: msg} }

// AutomaticRules returns a fresh copy of Dify's AUTOMATIC_RULES:
// remove_extra_spaces on, remove_urls_emails off, separator "\n",
// max_tokens 500, chunk_overlap 50.
func AutomaticRules() *Rules {
	return &Rules{
		PreProcessingRules: []PreProcessingRule{
			{ID: RuleRemoveExtraSpaces, Enabled: true},
			{ID: RuleRemoveURLsEmails, Enabled: false},
		},
		Segmentation: &Segmentation{
			Separator:    AutomaticSeparator,
			MaxTokens:    AutomaticMaxTokens,
			ChunkOverlap: AutomaticChunkOverlap,
		},
	}
}

// ParseProcessRule decodes and validates a process_rule JSON value the way
// Dify's DocumentService.process_rule_args_validate does, so type errors
// ("… is invalid") are reported with Dify's messages rather than as JSON
// decoding errors. For automatic mode the "rules" value is discarded
// unparsed (Dify replaces it). The result is not resolved; see
// [ProcessRule.Resolve]. Every error is a *ValidationError.
func ParseProcessRule(raw json.RawMessage) (ProcessRule, error) {
	var top map[string]json.RawMessage
	if isFalsy(raw) {
		return ProcessRule{}, invalid("Process rule is required")
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return ProcessRule{}, invalid("Process rule is invalid")
	}
	var pr ProcessRule
	m, ok := top["mode"]
	if !ok || isFalsy(m) {
		return pr, invalid("Process rule mode is required")
	}
	if err := json.Unmarshal(m, &pr.Mode); err != nil || !validMode(pr.Mode) {
		return ProcessRule{}, invalid("Process rule mode is invalid")
	}
	if pr.Mode == ModeAutomatic {
		return pr, nil
	}
	rr, ok := top["rules"]
	if !ok || isFalsy(rr) {
		return ProcessRule{}, invalid("Process rule rules is required")
	}
	var rules map[string]json.RawMessage
	if err := json.Unmarshal(rr, &rules); err != nil {
		return ProcessRule{}, invalid("Process rule rules is invalid")
	}
	pr.Rules = &Rules{}

	ppr, ok := rules["pre_processing_rules"]
	if !ok || isNull(ppr) {
		return ProcessRule{}, invalid("Process rule pre_processing_rules is required")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(ppr, &items); err != nil {
		return ProcessRule{}, invalid("Process rule pre_processing_rules is invalid")
	}
	pr.Rules.PreProcessingRules = make([]PreProcessingRule, 0, len(items))
	for _, it := range items {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(it, &obj); err != nil {
			return ProcessRule{}, invalid("Process rule pre_processing_rules id is required")
		}
		var r PreProcessingRule
		id, ok := obj["id"]
		if !ok || isFalsy(id) {
			return ProcessRule{}, invalid("Process rule pre_processing_rules id is required")
		}
		if err := json.Unmarshal(id, &r.ID); err != nil || !validPreRule(r.ID) {
			return ProcessRule{}, invalid("Process rule pre_processing_rules id is invalid")
		}
		en, ok := obj["enabled"]
		if !ok || isNull(en) {
			return ProcessRule{}, invalid("Process rule pre_processing_rules enabled is required")
		}
		if err := json.Unmarshal(en, &r.Enabled); err != nil {
			return ProcessRule{}, invalid("Process rule pre_processing_rules enabled is invalid")
		}
		pr.Rules.PreProcessingRules = append(pr.Rules.PreProcessingRules, r)
	}
	pr.Rules.PreProcessingRules = dedupe(pr.Rules.PreProcessingRules)

	if pm, ok := rules["parent_mode"]; ok && !isNull(pm) {
		if err := json.Unmarshal(pm, &pr.Rules.ParentMode); err != nil {
			return ProcessRule{}, invalid("Process rule parent_mode is invalid")
		}
	}
	seg, ok := rules["segmentation"]
	if !ok || isNull(seg) {
		return ProcessRule{}, invalid("Process rule segmentation is required")
	}
	s, err := parseSegmentation(seg, "Process rule segmentation")
	if err != nil {
		return ProcessRule{}, err
	}
	pr.Rules.Segmentation = s
	if sub, ok := rules["subchunk_segmentation"]; ok && !isNull(sub) {
		s, err := parseSegmentation(sub, "Process rule subchunk_segmentation")
		if err != nil {
			return ProcessRule{}, err
		}
		pr.Rules.SubchunkSegmentation = s
	}
	if err := pr.Validate(); err != nil {
		return ProcessRule{}, err
	}
	return pr, nil
}

// parseSegmentation decodes a segmentation object field by field so that
// wrong types map to Dify's "… is invalid" messages. Presence checks are
// left to Validate.
func parseSegmentation(raw json.RawMessage, prefix string) (*Segmentation, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, invalid(prefix + " is invalid")
	}
	s := &Segmentation{}
	if v, ok := obj["separator"]; ok && !isFalsy(v) {
		if err := json.Unmarshal(v, &s.Separator); err != nil {
			return nil, invalid(prefix + " separator is invalid")
		}
	}
	if v, ok := obj["max_tokens"]; ok && !isFalsy(v) {
		if !isInt(v) {
			return nil, invalid(prefix + " max_tokens is invalid")
		}
		if err := json.Unmarshal(v, &s.MaxTokens); err != nil {
			return nil, invalid(prefix + " max_tokens is invalid")
		}
	}
	if v, ok := obj["chunk_overlap"]; ok && !isNull(v) {
		// Dify does not validate chunk_overlap at request time; a wrong
		// type only fails at indexing. Parley rejects it up front.
		if !isInt(v) {
			return nil, invalid(prefix + " chunk_overlap is invalid")
		}
		if err := json.Unmarshal(v, &s.ChunkOverlap); err != nil {
			return nil, invalid(prefix + " chunk_overlap is invalid")
		}
	}
	return s, nil
}

// Validate applies Dify's presence checks to an already-typed rule (the
// type checks happen in ParseProcessRule). Automatic mode needs nothing
// but the mode. For hierarchical mode with parent_mode full-doc,
// segmentation max_tokens is not required. parent_mode, when set, must be
// paragraph or full-doc (a Parley check: Dify fails such a rule only at
// indexing time).
func (p ProcessRule) Validate() error {
	if p.Mode == "" {
		return invalid("Process rule mode is required")
	}
	if !validMode(p.Mode) {
		return invalid("Process rule mode is invalid")
	}
	if p.Mode == ModeAutomatic {
		return nil
	}
	r := p.Rules
	if r == nil {
		return invalid("Process rule rules is required")
	}
	if r.PreProcessingRules == nil {
		return invalid("Process rule pre_processing_rules is required")
	}
	for _, pp := range r.PreProcessingRules {
		if pp.ID == "" {
			return invalid("Process rule pre_processing_rules id is required")
		}
		if !validPreRule(pp.ID) {
			return invalid("Process rule pre_processing_rules id is invalid")
		}
	}
	if r.Segmentation == nil {
		return invalid("Process rule segmentation is required")
	}
	if r.Segmentation.Separator == "" {
		return invalid("Process rule segmentation separator is required")
	}
	fullDoc := p.Mode == ModeHierarchical && r.ParentMode == ParentModeFullDoc
	if !fullDoc && r.Segmentation.MaxTokens == 0 {
		return invalid("Process rule segmentation max_tokens is required")
	}
	if r.ParentMode != "" && r.ParentMode != ParentModeParagraph && r.ParentMode != ParentModeFullDoc {
		return invalid("Process rule parent_mode is invalid")
	}
	return nil
}

// Resolve returns the rule Dify actually indexes with: automatic mode gets
// a fresh copy of AUTOMATIC_RULES (any given rules are discarded);
// duplicate pre-processing rule ids are collapsed (last value wins, first
// position kept, as a Python dict would); a hierarchical rule without
// parent_mode gets paragraph. The receiver is not modified. Resolve does
// not validate; call Validate first.
func (p ProcessRule) Resolve() ProcessRule {
	if p.Mode == ModeAutomatic {
		return ProcessRule{Mode: ModeAutomatic, Rules: AutomaticRules()}
	}
	if p.Rules == nil {
		return p
	}
	r := *p.Rules
	r.PreProcessingRules = dedupe(r.PreProcessingRules)
	if r.Segmentation != nil {
		s := *r.Segmentation
		r.Segmentation = &s
	}
	if r.SubchunkSegmentation != nil {
		s := *r.SubchunkSegmentation
		r.SubchunkSegmentation = &s
	}
	if p.Mode == ModeHierarchical && r.ParentMode == "" {
		r.ParentMode = ParentModeParagraph
	}
	return ProcessRule{Mode: p.Mode, Rules: &r}
}

func dedupe(in []PreProcessingRule) []PreProcessingRule {
	if in == nil {
		return nil
	}
	out := make([]PreProcessingRule, 0, len(in))
	idx := make(map[string]int, len(in))
	for _, r := range in {
		if i, ok := idx[r.ID]; ok {
			out[i] = r
			continue
		}
		idx[r.ID] = len(out)
		out = append(out, r)
	}
	return out
}

func validMode(m string) bool {
	return m == ModeAutomatic || m == ModeCustom || m == ModeHierarchical
}

func validPreRule(id string) bool {
	return id == RuleRemoveExtraSpaces || id == RuleRemoveURLsEmails || id == RuleRemoveStopwords
}

func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// isFalsy reports whether a JSON value is falsy in Python's sense (the
// `not value` checks of Dify's validator).
func isFalsy(raw json.RawMessage) bool {
	switch strings.TrimSpace(string(raw)) {
	case "", "null", "false", "0", "0.0", `""`, "[]", "{}":
		return true
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return false
	}
	switch x := v.(type) {
	case float64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// isInt reports whether raw is a JSON integer literal (Python's json
// decodes 500.0 as float, which fails Dify's isinstance(int) check).
func isInt(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return false
	}
	if s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
