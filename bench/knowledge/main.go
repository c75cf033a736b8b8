// Command knowledge measures knowledge-base indexing throughput and retrieval latency on both
// storage engines, through the real knowledge service, store and vector index, with the fake
// OpenAI-compatible upstream (internal/providers/openaitest) as the embedding and rerank
// provider:
//
//   - indexing: MB of plain text indexed per second, economy (keywords + full-text terms) and
//     high quality (embeddings from the fake), measured from queueing to completed;
//   - retrieval: p50/p99 of RetrieveDataset at -chunks chunks for keyword (economy),
//     semantic, full-text and hybrid search (high quality).
//
// PostgreSQL runs when PARLEY_TEST_POSTGRES_URL (or the default local server) answers.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/parleyhq/parley/internal/blob"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/providers/registry"
	"github.com/parleyhq/parley/internal/segment"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/vectorindex"
)

func main() {
	var (
		chunks  = flag.Int("chunks", 100_000, "chunks in the retrieval benchmark's datasets")
		indexMB = flag.Float64("index-mb", 8, "MB of text in the indexing benchmark")
		queries = flag.Int("queries", 300, "queries per search method")
		dim     = flag.Int("dim", 256, "embedding dimensions of the fake embedder")
		pgURL   = flag.String("postgres", os.Getenv("PARLEY_BENCH_POSTGRES_URL"), "PostgreSQL server URL (empty: SQLite only)")
		out     = flag.String("o", "", "also write the report to this file")
		cpuProf = flag.String("cpuprofile", "", "write a CPU profile of the indexing benchmark here")
		retProf = flag.String("retrieval-cpuprofile", "", "write a CPU profile of each engine's retrieval queries to this path plus .sqlite or .postgres")
		keep    = flag.Bool("keep", false, "keep the databases (and print where they are) for inspection")
	)
	flag.Parse()
	var w io.Writer = os.Stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fatal(err)
		}
		defer f.Close()
		w = io.MultiWriter(os.Stdout, f)
	}
	engines := []string{"sqlite"}
	if *pgURL != "" {
		engines = append(engines, "postgres")
	}
	fmt.Fprintf(w, "knowledge benchmark: %d chunks, %.1f MB indexing corpus, %d queries/method, %d-dim fake embeddings\n\n", *chunks, *indexMB, *queries, *dim)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "engine\tmeasurement\tvalue")
	for _, eng := range engines {
		b, err := newBench(eng, *pgURL, *dim)
		if err != nil {
			fatal(err)
		}
		if eng == engines[0] {
			fmt.Fprintf(tw, "-\tbaseline: split only, in memory\t%.2f MB/s\n", splitOnly(*indexMB))
		}
		for _, tech := range []string{store.TechniqueEconomy, store.TechniqueHighQuality} {
			if *cpuProf != "" && tech == store.TechniqueEconomy && eng == "sqlite" {
				f, err := os.Create(*cpuProf)
				if err != nil {
					fatal(err)
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					fatal(err)
				}
			}
			mbps, err := b.indexing(tech, *indexMB)
			pprof.StopCPUProfile()
			if err != nil {
				fatal(err)
			}
			fmt.Fprintf(tw, "%s\tindexing %s\t%.2f MB/s\n", eng, tech, mbps)
		}
		prof := ""
		if *retProf != "" {
			prof = *retProf + "." + eng
		}
		res, err := b.retrieval(*chunks, *queries, prof)
		if err != nil {
			fatal(err)
		}
		var base latency
		for _, r := range res {
			if strings.Contains(r.method, "(baseline)") {
				base = r
				fmt.Fprintf(tw, "%s\tretrieve %s p50 / p99\t%.2f / %.2f ms\t\n", eng, r.method, r.p50, r.p99)
				continue
			}
			fmt.Fprintf(tw, "%s\tretrieve %s p50 / p99\t%.2f / %.2f ms\t%.1f× / %.1f× the 1k baseline%s\n",
				eng, r.method, r.p50, r.p99, r.p50/base.p50, r.p99/base.p99, retrievalTarget(r))
		}
		if *keep {
			fmt.Fprintf(os.Stderr, "kept %s database: %s %s\n", eng, b.dbURL, b.dir)
			b.cleanup, b.dir = func() {}, ""
		}
		b.close()
		tw.Flush()
	}
	tw.Flush()
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "knowledge bench:", err)
	os.Exit(1)
}

type bench struct {
	svc     *knowledge.Service
	st      *store.Store
	up      *openaitest.Server
	dir     string
	dbURL   string
	cleanup func()
}

const benchConfig = `
providers:
  - name: openai
    base_url: ${UPSTREAM}
    api_key_env: UPSTREAM_KEY
    models:
      - {name: text-embedding-3-small, type: text-embedding, context_size: 8191, max_chunks: 256}
`

func newBench(engine, pgURL string, dim int) (*bench, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "parley-knowledge-bench")
	if err != nil {
		return nil, err
	}
	up := openaitest.NewServer(openaitest.WithEmbeddingDim(dim))
	file, err := config.ParseFile([]byte(benchConfig), up.Getenv)
	if err != nil {
		return nil, err
	}
	dbURL := ""
	cleanup := func() {}
	if engine == "postgres" {
		if dbURL, cleanup, err = freshDatabase(ctx, pgURL); err != nil {
			return nil, err
		}
	}
	st, err := store.Open(ctx, dbURL, dir)
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		return nil, err
	}
	blobs, err := blob.NewDir(dir + "/blobs")
	if err != nil {
		return nil, err
	}
	fs := files.New(files.Options{Store: st, Blobs: blobs, Limits: config.UploadLimits{FileSizeLimitMB: 1024, ImageFileSizeLimitMB: 10, AudioFileSizeLimitMB: 50, VideoFileSizeLimitMB: 100}})
	catalog := models.NewCatalog(file.Providers, up.Getenv)
	svc := knowledge.New(knowledge.Options{Store: st, Files: fs, Catalog: catalog, Models: registry.New(catalog.APIKey),
		Vectors: vectorindex.NewMemory(st), AccountID: "bench", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return &bench{svc: svc, st: st, up: up, dir: dir, dbURL: dbURL, cleanup: cleanup}, nil
}

func (b *bench) close() {
	b.st.Close()
	b.up.Close()
	b.cleanup()
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// words is a fixed pseudo-English vocabulary.
var words = func() []string {
	r := rand.New(rand.NewPCG(1, 2))
	const letters = "abcdefghijklmnopqrstuvwxyz"
	out := make([]string, 5000)
	for i := range out {
		n := 3 + r.IntN(7)
		var sb strings.Builder
		for range n {
			sb.WriteByte(letters[r.IntN(len(letters))])
		}
		out[i] = sb.String()
	}
	return out
}()

// corpus returns about n bytes of text in paragraphs of about 450 characters (one chunk each
// with the automatic rule's 500-character chunks).
func corpus(r *rand.Rand, n int) string {
	var sb strings.Builder
	sb.Grow(n + 512)
	for sb.Len() < n {
		start := sb.Len()
		for sb.Len()-start < 450 {
			// Zipf-like: common words come up often, as in real text.
			w := words[int(float64(len(words))*r.Float64()*r.Float64()*r.Float64())]
			sb.WriteString(w)
			sb.WriteByte(' ')
		}
		sb.WriteString(".\n\n")
	}
	return sb.String()
}

// splitOnly is the indexing baseline: cleaning and splitting the same text with the automatic
// rule, in memory, with no keywords, embeddings or writes.
func splitOnly(mb float64) float64 {
	text := corpus(rand.New(rand.NewPCG(3, 4)), int(mb*(1<<20)))
	start := time.Now()
	if _, err := (segment.Splitter{NoTokens: true}).Split(text, segment.ProcessRule{Mode: segment.ModeAutomatic}); err != nil {
		fatal(err)
	}
	return float64(len(text)) / (1 << 20) / time.Since(start).Seconds()
}

// index creates a document and runs its indexing in this goroutine, returning the time taken.
func (b *bench) index(ctx context.Context, datasetID, name, text string) (time.Duration, error) {
	start := time.Now()
	v, _, err := b.svc.CreateDocument(ctx, datasetID, knowledge.DocumentConfig{ProcessRule: []byte(`{"mode":"automatic"}`)},
		knowledge.Source{Filename: name, Body: strings.NewReader(text), Text: true})
	if err != nil {
		return 0, err
	}
	if err := b.svc.IndexDocument(ctx, datasetID, v.ID); err != nil {
		return 0, err
	}
	got, err := b.svc.GetDocument(ctx, datasetID, v.ID)
	if err != nil {
		return 0, err
	}
	if got.IndexingStatus != store.IndexingCompleted {
		return 0, fmt.Errorf("document ended %s: %s", got.IndexingStatus, got.Error)
	}
	return time.Since(start), nil
}

func (b *bench) dataset(ctx context.Context, name, tech string) (knowledge.DatasetView, error) {
	in := knowledge.CreateDatasetInput{Name: name, IndexingTechnique: tech}
	if tech == store.TechniqueHighQuality {
		in.EmbeddingModelProvider, in.EmbeddingModel = "openai", "text-embedding-3-small"
	}
	return b.svc.CreateDataset(ctx, in)
}

func (b *bench) indexing(tech string, mb float64) (float64, error) {
	ctx := context.Background()
	d, err := b.dataset(ctx, "indexing-"+tech, tech)
	if err != nil {
		return 0, err
	}
	text := corpus(rand.New(rand.NewPCG(3, 4)), int(mb*(1<<20)))
	took, err := b.index(ctx, d.ID, "corpus", text)
	if err != nil {
		return 0, err
	}
	return float64(len(text)) / (1 << 20) / took.Seconds(), nil
}

// targetRetrievalP99 is the p99 target of keyword, full-text and semantic search at the
// benchmark's full size, on both engines.
const targetRetrievalP99 = 20.0 // ms

// retrievalTarget is the target column of a retrieval figure at full size: the p99 target and
// whether it is met, for the methods that have one.
func retrievalTarget(l latency) string {
	for _, m := range []string{"keyword_search", "semantic_search", "full_text_search"} {
		if strings.HasPrefix(l.method, m) {
			v := "MET"
			if l.p99 > targetRetrievalP99 {
				v = "MISSED"
			}
			return fmt.Sprintf("; target p99 ≤ %.0f ms: %s", targetRetrievalP99, v)
		}
	}
	return ""
}

type latency struct {
	method   string
	p50, p99 float64
}

// retrieval builds the datasets and measures the search methods; with prof set, the searches
// (not the building) are CPU profiled there.
func (b *bench) retrieval(chunks, queries int, prof string) ([]latency, error) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 6))
	// Documents of 2,000 chunks each (about 1 MB).
	const perDoc = 2000
	build := func(name string) (knowledge.DatasetView, error) {
		tech, _, _ := strings.Cut(name, "-")
		d, err := b.dataset(ctx, "retrieval-"+name, tech)
		if err != nil {
			return d, err
		}
		for i := 0; i*perDoc < chunks; i++ {
			n := min(perDoc, chunks-i*perDoc)
			if _, err := b.index(ctx, d.ID, fmt.Sprintf("doc-%d", i), corpus(r, n*450)); err != nil {
				return d, err
			}
		}
		return d, nil
	}
	full := chunks
	chunks = 1000
	ecoSmall, err := build(store.TechniqueEconomy + "-1k")
	if err != nil {
		return nil, err
	}
	hqSmall, err := build(store.TechniqueHighQuality + "-1k")
	if err != nil {
		return nil, err
	}
	chunks = full
	eco, err := build(store.TechniqueEconomy)
	if err != nil {
		return nil, err
	}
	hq, err := build(store.TechniqueHighQuality)
	if err != nil {
		return nil, err
	}
	methods := []struct {
		name    string
		dataset string
		model   string
	}{
		{"keyword_search (economy)", eco.ID, `{"search_method":"keyword_search","reranking_enable":false,"top_k":4,"score_threshold_enabled":false}`},
		{"semantic_search", hq.ID, `{"search_method":"semantic_search","reranking_enable":false,"top_k":4,"score_threshold_enabled":false}`},
		{"full_text_search", hq.ID, `{"search_method":"full_text_search","reranking_enable":false,"top_k":4,"score_threshold_enabled":false}`},
		{"hybrid_search (weighted)", hq.ID, `{"search_method":"hybrid_search","reranking_enable":false,"reranking_mode":"weighted_score","weights":{"weight_type":"customized","vector_setting":{"vector_weight":0.7},"keyword_setting":{"keyword_weight":0.3}},"top_k":4,"score_threshold_enabled":false}`},
	}
	if b.st.Dialect() == store.DialectPostgres {
		// Autovacuum would analyze the freshly filled tables within a minute; the full-text
		// search relies on those statistics (see store.commonLexemes), so take them now.
		if _, err := b.st.DB().ExecContext(ctx, "ANALYZE"); err != nil {
			return nil, err
		}
	}
	if prof != "" {
		f, err := os.Create(prof)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	var out []latency
	small := map[string]string{eco.ID: ecoSmall.ID, hq.ID: hqSmall.ID}
	for _, m := range methods {
		m.name += fmt.Sprintf(" @%dk", chunks/1000)
		base := m
		base.name = strings.Replace(m.name, fmt.Sprintf("@%dk", chunks/1000), "@1k (baseline)", 1)
		base.dataset = small[m.dataset]
		for _, mm := range []struct{ name, dataset, model string }{base, {m.name, m.dataset, m.model}} {
			l, err := b.measure(ctx, r, mm.name, mm.dataset, mm.model, queries)
			if err != nil {
				return nil, err
			}
			out = append(out, l)
		}
	}
	return out, nil
}

// measure runs queries random queries against the dataset and returns their p50 and p99.
func (b *bench) measure(ctx context.Context, r *rand.Rand, name, dataset, model string, queries int) (latency, error) {
	// Warm the vector index and statement caches.
	if _, err := b.svc.RetrieveDataset(ctx, dataset, knowledge.RetrieveInput{Query: "warm up query", RetrievalModel: []byte(model)}); err != nil {
		return latency{}, fmt.Errorf("%s: %w", name, err)
	}
	times := make([]float64, 0, queries)
	for range queries {
		q := make([]string, 3+r.IntN(4))
		for i := range q {
			q[i] = words[int(float64(len(words))*r.Float64()*r.Float64())]
		}
		start := time.Now()
		if _, err := b.svc.RetrieveDataset(ctx, dataset, knowledge.RetrieveInput{Query: strings.Join(q, " "), RetrievalModel: []byte(model)}); err != nil {
			return latency{}, fmt.Errorf("%s: %w", name, err)
		}
		times = append(times, float64(time.Since(start).Microseconds())/1000)
	}
	slices.Sort(times)
	return latency{name, times[len(times)/2], times[len(times)*99/100]}, nil
}
