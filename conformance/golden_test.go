package conformance

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var (
	uuidRE    = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	createdRE = regexp.MustCompile(`"created_at":\d+`)
	latencyRE = regexp.MustCompile(`"latency":[0-9.e-]+`)
)

// normalize replaces what differs between runs: ids (numbered by first appearance, so equal
// ids stay equal), timestamps and latencies.
func normalize(s string) string {
	ids := map[string]string{}
	s = uuidRE.ReplaceAllStringFunc(s, func(id string) string {
		if _, ok := ids[id]; !ok {
			ids[id] = fmt.Sprintf("<uuid-%d>", len(ids)+1)
		}
		return ids[id]
	})
	s = createdRE.ReplaceAllString(s, `"created_at":<ts>`)
	return latencyRE.ReplaceAllString(s, `"latency":<seconds>`)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs (run with -update after checking)\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

// TestGoldenTranscripts pins the exact bytes of a blocking reply and of a stream, framing
// included, after normalising ids, times and latency.
func TestGoldenTranscripts(t *testing.T) {
	p := startParley(t, "sqlite")
	reply := openaitest.Reply{Chunks: []string{"Hello", " there", "!"}, Usage: &providers.Usage{PromptTokens: 24, CompletionTokens: 3}}
	for _, tc := range []struct{ mode, file string }{{"blocking", "chat_blocking.json.golden"}, {"streaming", "chat_streaming.sse.golden"}} {
		t.Run(tc.mode, func(t *testing.T) {
			q := "golden " + tc.mode
			upstream.On(q, reply)
			body := `{"query":"` + q + `","inputs":{"tone":"dry"},"user":"golden","response_mode":"` + tc.mode + `","auto_generate_name":false}`
			req, _ := newRequest("POST", p.URL+"/chat-messages", body, p.AppKey)
			got := httpTranscript(rawDo(t, req))
			golden(t, tc.file, normalize(strings.TrimRight(got, "\n")+"\n"))
		})
	}
	// A Completion app's: no conversation in the reply or the events.
	for _, tc := range []struct{ mode, file string }{{"blocking", "completion_blocking.json.golden"}, {"streaming", "completion_streaming.sse.golden"}} {
		t.Run("completion "+tc.mode, func(t *testing.T) {
			who := "golden completion " + tc.mode
			upstream.On("note to "+who, openaitest.Reply{Chunks: []string{"Dear", " reader", "."}, Usage: &providers.Usage{PromptTokens: 12, CompletionTokens: 3}})
			body := `{"inputs":{"tone":"warm","name":"` + who + `"},"query":"","user":"golden","response_mode":"` + tc.mode + `"}`
			req, _ := newRequest("POST", p.URL+"/completion-messages", body, p.CompletionKey(t))
			got := httpTranscript(rawDo(t, req))
			golden(t, tc.file, normalize(strings.TrimRight(got, "\n")+"\n"))
		})
	}
}
