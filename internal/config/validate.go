package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var (
	// Provider names may mimic Dify plugin ids (langgenius/openai/openai).
	providerNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)*$`)
	appNameRE      = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	variableRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// Plain non-negative decimals as Dify writes them ("0.15", "0.000001");
	// no signs, exponents or thousands separators.
	decimalRE  = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)
)

// perUnit maps the pricing.per shorthand to Dify's unit multiplier.
func perUnit(per string) (string, bool) {
	switch per {
	case "1k":
		return "0.001", true
	case "1m":
		return "0.000001", true
	}
	return "", false
}

// normalize applies defaults and validates the decoded file. Errors are
// collected so that one run reports every problem.
func (f *File) normalize() error {
	var errs []error
	bad := func(path, format string, args ...any) { addErr(&errs, path, format, args...) }

	f.Workspace.Name = strings.TrimSpace(f.Workspace.Name)
	if f.Workspace.Name == "" {
		f.Workspace.Name = DefaultWorkspaceName
	}

	providers := nameIndex{}
	for i := range f.Providers {
		p := &f.Providers[i]
		normalizeProvider(p, indexPath("providers", i), bad)
		providers.claim(p.Name, "providers", i, "provider", bad)
	}

	externalAPIs := nameIndex{}
	for i := range f.ExternalKnowledgeAPIs {
		a := &f.ExternalKnowledgeAPIs[i]
		normalizeExternalAPI(a, indexPath("external_knowledge_apis", i), bad)
		externalAPIs.claim(a.Name, "external_knowledge_apis", i, "external knowledge API", bad)
	}

	kbs := nameIndex{}
	for i := range f.KnowledgeBases {
		kb := &f.KnowledgeBases[i]
		path := indexPath("knowledge_bases", i)
		kb.Name = strings.TrimSpace(kb.Name)
		if kb.Name == "" {
			bad(path+".name", "required")
		}
		kbs.claim(kb.Name, "knowledge_bases", i, "knowledge base", bad)
		if kb.External != nil {
			normalizeExternalRef(kb.External, path+".external", externalAPIs, bad)
			if kb.Embedding.Provider != "" || kb.Embedding.Model != "" {
				bad(path+".embedding", "an external knowledge base has no embedding model: its API searches")
			}
			continue
		}
		// Without an embedding model the knowledge base is economy (keyword search).
		if kb.Embedding.Provider != "" || kb.Embedding.Model != "" {
			f.checkModelRef(path+".embedding", kb.Embedding.Provider, kb.Embedding.Model, ModelTypeTextEmbedding, "model", bad)
		}
	}

	apps := nameIndex{}
	for i := range f.Apps {
		a := &f.Apps[i]
		path := indexPath("apps", i)
		f.normalizeApp(a, path, kbs, bad)
		if ap := a.TextToSpeech.AutoPlay; ap != "" && ap != "enabled" && ap != "disabled" {
			bad(path+".text_to_speech.auto_play", "%q: use enabled or disabled", ap)
		}
		apps.claim(a.Name, "apps", i, "app", bad)
	}
	return errors.Join(errs...)
}

// nameIndex is where each name of one of the file's lists stands in it.
type nameIndex map[string]int

// claim records name as the one at index i of list; an empty name (reported by its own check)
// is skipped, and a duplicate is reported as the what it names and not recorded.
func (n nameIndex) claim(name, list string, i int, what string, bad badFunc) {
	if name == "" {
		return
	}
	if j, dup := n[name]; dup {
		bad(indexPath(list, i)+".name", "duplicate %s %q (also %s[%d])", what, name, list, j)
		return
	}
	n[name] = i
}

type badFunc func(path, format string, args ...any)

func normalizeProvider(p *Provider, path string, bad badFunc) {
	p.Name = strings.TrimSpace(p.Name)
	switch {
	case p.Name == "":
		bad(path+".name", "required")
	case !providerNameRE.MatchString(p.Name):
		bad(path+".name", "%q: use letters, digits, '_', '-', '.' and '/' separators", p.Name)
	}
	if p.Type == "" {
		p.Type = ProviderTypeOpenAICompatible
	}
	if p.Type != ProviderTypeOpenAICompatible {
		bad(path+".type", "unsupported provider type %q (supported: %s)", p.Type, ProviderTypeOpenAICompatible)
	}
	p.Label = p.Label.WithFallback(p.Name)
	p.IconSmall = normalizeIcon(p.IconSmall, path+".icon_small", bad)
	if p.IconSmall == nil {
		p.IconSmall = I18n{}
	}
	p.IconSmallDark = normalizeIcon(p.IconSmallDark, path+".icon_small_dark", bad)

	p.BaseURL = strings.TrimRight(strings.TrimSpace(p.BaseURL), "/")
	if p.BaseURL == "" {
		bad(path+".base_url", "required")
	} else if err := checkHTTPURL(p.BaseURL); err != nil {
		bad(path+".base_url", "%v", err)
	}
	p.APIKeyEnv = strings.TrimSpace(p.APIKeyEnv)
	switch {
	case p.APIKeyEnv != "" && !validEnvName(p.APIKeyEnv):
		bad(path+".api_key_env", "%q is not an environment variable name (the key itself never goes in the file)", p.APIKeyEnv)
	case p.APIKeyEnv == "" && p.RequiresAPIKey:
		bad(path+".api_key_env", "required unless requires_api_key is false")
	}
	if p.Timeout <= 0 {
		bad(path+".timeout", "must be positive")
	}
	if p.CallTimeout < 0 {
		bad(path+".call_timeout", "must not be negative (leave it out for PARLEY_MODEL_CALL_TIMEOUT)")
	}

	seen := map[[2]string]int{}
	for j := range p.Models {
		m := &p.Models[j]
		mpath := indexPath(path+".models", j)
		normalizeModel(m, mpath, bad)
		key := [2]string{m.Type, m.Name}
		if m.Name == "" {
			continue
		}
		if k, dup := seen[key]; dup {
			bad(mpath+".name", "duplicate %s model %q (also models[%d])", m.Type, m.Name, k)
			continue
		}
		seen[key] = j
	}
}

// normalizeIcon checks an icon map and fills zh_Hans from en_US. It returns
// nil for an empty map.
func normalizeIcon(icon I18n, path string, bad badFunc) I18n {
	if len(icon) == 0 {
		return nil
	}
	if strings.TrimSpace(icon[LocaleEnUS]) == "" {
		bad(path+"."+LocaleEnUS, "required when any icon locale is set")
	}
	out := icon.WithFallback("")
	for _, k := range slices.Sorted(maps.Keys(out)) {
		if err := checkHTTPURL(out[k]); err != nil && out[k] != "" {
			bad(path+"."+k, "%v", err)
		}
	}
	return out
}

func normalizeModel(m *Model, path string, bad badFunc) {
	m.Name = strings.TrimSpace(m.Name)
	if m.Name == "" {
		bad(path+".name", "required")
	}
	m.Label = m.Label.WithFallback(m.Name)
	if !slices.Contains(ModelTypes(), m.Type) {
		if m.Type == "" {
			bad(path+".type", "required (one of %s)", strings.Join(ModelTypes(), ", "))
		} else {
			bad(path+".type", "unknown model type %q (one of %s)", m.Type, strings.Join(ModelTypes(), ", "))
		}
	}
	needsContext := m.Type == ModelTypeLLM || m.Type == ModelTypeTextEmbedding
	switch {
	case m.ContextSize < 0:
		bad(path+".context_size", "must not be negative")
	case m.ContextSize == 0 && needsContext:
		bad(path+".context_size", "required for %s models", m.Type)
	}
	switch {
	case m.MaxChunks < 0:
		bad(path+".max_chunks", "must not be negative")
	case m.MaxChunks > 0 && m.Type != ModelTypeTextEmbedding:
		bad(path+".max_chunks", "only applies to text-embedding models")
	}
	if m.Type == ModelTypeLLM {
		if m.Mode == "" {
			m.Mode = ModelModeChat
		}
		if m.Mode != ModelModeChat && m.Mode != ModelModeCompletion {
			bad(path+".mode", "must be chat or completion, got %q", m.Mode)
		}
	} else if m.Mode != "" {
		bad(path+".mode", "only applies to llm models")
	}
	switch {
	case m.MaxOutputTokens < 0:
		bad(path+".max_output_tokens", "must not be negative")
	case m.MaxOutputTokens > 0 && m.Type != ModelTypeLLM:
		bad(path+".max_output_tokens", "only applies to llm models")
	case m.MaxOutputTokens > 0 && m.ContextSize > 0 && m.MaxOutputTokens > m.ContextSize:
		bad(path+".max_output_tokens", "%d exceeds context_size %d", m.MaxOutputTokens, m.ContextSize)
	}
	for k, feat := range m.Features {
		if !slices.Contains(ModelFeatures(), feat) {
			bad(indexPath(path+".features", k), "unknown feature %q (one of %s)", feat, strings.Join(ModelFeatures(), ", "))
		} else if slices.Index(m.Features, feat) < k {
			bad(indexPath(path+".features", k), "duplicate feature %q", feat)
		}
	}
	if len(m.Features) == 0 {
		m.Features = nil
	}
	if m.Pricing != nil {
		normalizePricing(m.Pricing, path+".pricing", bad)
	}
}

func normalizePricing(pr *Pricing, path string, bad badFunc) {
	pr.Input = strings.TrimSpace(pr.Input)
	pr.Output = strings.TrimSpace(pr.Output)
	pr.Unit = strings.TrimSpace(pr.Unit)
	pr.Per = strings.ToLower(strings.TrimSpace(pr.Per))
	switch {
	case pr.Input == "":
		bad(path+".input", "required")
	case !decimalRE.MatchString(pr.Input):
		bad(path+".input", "%q is not a decimal", pr.Input)
	}
	if pr.Output != "" && !decimalRE.MatchString(pr.Output) {
		bad(path+".output", "%q is not a decimal", pr.Output)
	}
	switch {
	case pr.Unit != "" && pr.Per != "":
		bad(path+".per", "set either unit or per, not both")
	case pr.Per != "":
		unit, ok := perUnit(pr.Per)
		if !ok {
			bad(path+".per", "must be 1k or 1m, got %q", pr.Per)
		}
		pr.Unit = unit
	case pr.Unit == "":
		bad(path+".unit", `required (or per: 1k | 1m); "0.000001" means prices are per 1M tokens`)
	case !decimalRE.MatchString(pr.Unit):
		bad(path+".unit", "%q is not a decimal", pr.Unit)
	case strings.Trim(pr.Unit, "0.") == "":
		bad(path+".unit", "must not be zero")
	}
	pr.Currency = strings.ToUpper(strings.TrimSpace(pr.Currency))
	if pr.Currency == "" {
		pr.Currency = DefaultCurrency
	}
	if !currencyRE.MatchString(pr.Currency) {
		bad(path+".currency", "%q is not a three-letter currency code", pr.Currency)
	}
}

// appModesNeedingModel are the form-configured modes, which cannot run
// without an LLM; advanced-chat and workflow apps are driven by a graph.
var appModesNeedingModel = []string{AppModeChat, AppModeAgentChat, AppModeAgent, AppModeCompletion}

func (f *File) normalizeApp(a *App, path string, kbs map[string]int, bad badFunc) {
	a.Name = strings.TrimSpace(a.Name)
	switch {
	case a.Name == "":
		bad(path+".name", "required")
	case !appNameRE.MatchString(a.Name):
		bad(path+".name", "%q must match [a-z0-9][a-z0-9_-]*", a.Name)
	}
	switch {
	case a.Mode == "":
		bad(path+".mode", "required (one of %s)", strings.Join(AppModes(), ", "))
	case !slices.Contains(AppModes(), a.Mode):
		bad(path+".mode", "unknown app mode %q (one of %s)", a.Mode, strings.Join(AppModes(), ", "))
	}
	switch {
	case a.HasModel():
		f.checkModelRef(path+".model", a.Model.Provider, a.Model.Name, ModelTypeLLM, "name", bad)
	case slices.Contains(appModesNeedingModel, a.Mode):
		bad(path+".model", "required for %s apps", a.Mode)
	}
	if a.Model.Parameters == nil {
		a.Model.Parameters = map[string]any{}
	}
	for k, q := range a.SuggestedQuestions {
		if strings.TrimSpace(q) == "" {
			bad(indexPath(path+".suggested_questions", k), "must not be empty")
		}
	}
	for name, v := range map[string]int64{"requests_per_minute": a.RateLimits.RequestsPerMinute,
		"tokens_per_day": a.RateLimits.TokensPerDay, "workflow_runs_per_day": a.RateLimits.WorkflowRunsPerDay} {
		if v < 0 {
			bad(path+".rate_limits."+name, "must not be negative")
		}
	}
	if a.MaxActiveRequests < 0 {
		bad(path+".max_active_requests", "must not be negative")
	}
	if a.Site != nil {
		if r := a.Site.RequestsPerMinute; r != nil && *r < 0 {
			bad(path+".site.requests_per_minute", "must not be negative")
		}
		for k, o := range a.Site.AllowedOrigins {
			if !validOrigin(o) {
				bad(indexPath(path+".site.allowed_origins", k), "want an origin such as https://example.com, got %q", o)
			}
		}
	}
	vars := map[string]int{}
	for k := range a.UserInputForm {
		in := &a.UserInputForm[k]
		ipath := indexPath(path+".user_input_form", k)
		normalizeInput(in, ipath, bad)
		if in.Variable == "" {
			continue
		}
		if j, dup := vars[in.Variable]; dup {
			bad(ipath+".variable", "duplicate variable %q (also user_input_form[%d])", in.Variable, j)
			continue
		}
		vars[in.Variable] = k
	}
	switch {
	case a.DatasetQueryVariable != "" && a.Mode != AppModeCompletion:
		bad(path+".dataset_query_variable", "only applies to completion apps")
	case a.DatasetQueryVariable != "":
		if _, ok := vars[a.DatasetQueryVariable]; !ok {
			bad(path+".dataset_query_variable", "%q is not a variable of user_input_form", a.DatasetQueryVariable)
		}
	case a.Mode == AppModeCompletion && len(a.KnowledgeBases) > 0:
		bad(path+".dataset_query_variable", "required for completion apps with knowledge bases")
	}
	for k, name := range a.KnowledgeBases {
		kpath := indexPath(path+".knowledge_bases", k)
		if _, ok := kbs[name]; !ok {
			bad(kpath, "unknown knowledge base %q", name)
		} else if slices.Index(a.KnowledgeBases, name) < k {
			bad(kpath, "duplicate knowledge base %q", name)
		}
	}
}

var inputTypes = []string{InputText, InputParagraph, InputSelect, InputNumber, InputCheckbox}

func normalizeInput(in *InputField, path string, bad badFunc) {
	if !slices.Contains(inputTypes, in.Type) {
		bad(path+".type", "unknown input type %q (one of %s)", in.Type, strings.Join(inputTypes, ", "))
	}
	switch {
	case in.Variable == "":
		bad(path+".variable", "required")
	case !variableRE.MatchString(in.Variable):
		bad(path+".variable", "%q must match [A-Za-z_][A-Za-z0-9_]*", in.Variable)
	}
	if strings.TrimSpace(in.Label) == "" {
		in.Label = in.Variable
	}
	textual := in.Type == InputText || in.Type == InputParagraph
	switch {
	case in.MaxLength < 0:
		bad(path+".max_length", "must not be negative")
	case in.MaxLength > 0 && !textual:
		bad(path+".max_length", "only applies to text-input and paragraph")
	case in.MaxLength > 0 && len([]rune(in.Default)) > in.MaxLength:
		bad(path+".default", "longer than max_length %d", in.MaxLength)
	}
	if in.Type == InputSelect {
		if len(in.Options) == 0 {
			bad(path+".options", "required for select")
		}
		for k, o := range in.Options {
			if slices.Index(in.Options, o) < k {
				bad(indexPath(path+".options", k), "duplicate option %q", o)
			}
		}
		if in.Default != "" && !slices.Contains(in.Options, in.Default) {
			bad(path+".default", "%q is not one of the options", in.Default)
		}
	} else if len(in.Options) > 0 {
		bad(path+".options", "only applies to select")
	}
	if in.Default == "" {
		return
	}
	switch in.Type {
	case InputNumber:
		if _, err := strconv.ParseFloat(in.Default, 64); err != nil {
			bad(path+".default", "%q is not a number", in.Default)
		}
	case InputCheckbox:
		if _, err := strconv.ParseBool(in.Default); err != nil {
			bad(path+".default", "%q is not true or false", in.Default)
		}
	}
}

// checkModelRef checks that provider declares an enabled model of the given
// type and name. nameKey is the YAML key holding the model name.
func (f *File) checkModelRef(path, provider, name, modelType, nameKey string, bad badFunc) {
	if provider == "" {
		bad(path+".provider", "required")
	}
	if name == "" {
		bad(path+"."+nameKey, "required")
	}
	if provider == "" || name == "" {
		return
	}
	p, ok := f.Provider(provider)
	if !ok {
		bad(path+".provider", "unknown provider %q", provider)
		return
	}
	m, ok := p.Model(modelType, name)
	if !ok {
		bad(path+"."+nameKey, "provider %q declares no %s model %q", provider, modelType, name)
		return
	}
	if !m.Enabled {
		bad(path+"."+nameKey, "%s model %q of provider %q is disabled", modelType, name, provider)
	}
}

func checkHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a valid URL", raw)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q must be an http or https URL", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", raw)
	}
	return nil
}

// validOrigin reports whether o is a web origin: http or https, a host and an optional port,
// nothing after ("*" allows every origin).
func validOrigin(o string) bool {
	if o == "*" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil &&
		(u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.Fragment == "" && !strings.ContainsAny(u.Host, " \\")
}

// ValidOrigin is validOrigin for the CLI's --allow-origin.
func ValidOrigin(o string) bool { return validOrigin(o) }

// MaxExternalTopK is the largest top_k of an external knowledge base.
const MaxExternalTopK = 100

func normalizeExternalAPI(a *ExternalKnowledgeAPI, path string, bad badFunc) {
	a.Name = strings.TrimSpace(a.Name)
	if a.Name == "" {
		bad(path+".name", "required")
	}
	a.Endpoint = strings.TrimRight(strings.TrimSpace(a.Endpoint), "/")
	if a.Endpoint == "" {
		bad(path+".endpoint", "required")
	} else if err := CheckHTTPURL(a.Endpoint); err != nil {
		bad(path+".endpoint", "%v", err)
	}
	a.APIKeyEnv = strings.TrimSpace(a.APIKeyEnv)
	switch {
	case a.APIKeyEnv == "":
		bad(path+".api_key_env", "required: the environment variable that holds the API key")
	case !validEnvName(a.APIKeyEnv):
		bad(path+".api_key_env", "%q is not an environment variable name (the key itself never goes in the file)", a.APIKeyEnv)
	}
}

func normalizeExternalRef(x *ExternalKnowledgeRef, path string, apis map[string]int, bad badFunc) {
	x.API = strings.TrimSpace(x.API)
	if x.API == "" {
		bad(path+".api", "required")
	} else if _, ok := apis[x.API]; !ok {
		bad(path+".api", "unknown external knowledge API %q (declare it in external_knowledge_apis)", x.API)
	}
	x.KnowledgeID = strings.TrimSpace(x.KnowledgeID)
	if x.KnowledgeID == "" {
		bad(path+".knowledge_id", "required")
	}
	if x.TopK < 0 || x.TopK > MaxExternalTopK {
		bad(path+".top_k", "must be from 1 to %d (0 or unset for 2)", MaxExternalTopK)
	}
	if t := x.ScoreThreshold; t != nil && (*t < 0 || *t > 1) {
		bad(path+".score_threshold", "must be from 0 to 1")
	}
}

// CheckHTTPURL reports why raw is not an absolute http or https URL with a host, or nil.
func CheckHTTPURL(raw string) error { return checkHTTPURL(raw) }

// ValidEnvName reports whether s can name an environment variable: letters, digits and '_',
// not starting with a digit.
func ValidEnvName(s string) bool { return validEnvName(s) }
