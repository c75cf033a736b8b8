package conformance

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/client"
)

// newClient is the generated client, authenticated with key, over the contract-checking transport.
func newClient(t *testing.T, p *Parley, key string) *client.ClientWithResponses {
	t.Helper()
	c, err := client.NewClientWithResponses(p.URL,
		client.WithHTTPClient(newContractClient(t)),
		client.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+key)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestModelsListing checks the whole body of the models listing for every model type against
// what the conformance config declares: only configured providers (a key, or none needed),
// only enabled, non-deprecated models of the type, providers without such models omitted.
func TestModelsListing(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		if p.engine.Name == "" {
			t.Skip("expectations depend on the conformance config")
		}
		c := newClient(t, p, p.KnowledgeKey)
		tenant := ""
		for _, mt := range []client.ModelType{client.Llm, client.TextEmbedding, client.Rerank, client.Tts, client.Speech2text, client.Moderation} {
			t.Run(string(mt), func(t *testing.T) {
				resp, err := c.ListAvailableModelsWithResponse(context.Background(), mt)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode() != http.StatusOK || resp.JSON200 == nil {
					t.Fatalf("status %d: %s", resp.StatusCode(), resp.Body)
				}
				for _, prov := range resp.JSON200.Data {
					if _, err := uuid.Parse(prov.TenantId); err != nil {
						t.Errorf("tenant_id %q is not a workspace uuid", prov.TenantId)
					}
					if tenant == "" {
						tenant = prov.TenantId
					}
					if prov.TenantId != tenant {
						t.Errorf("tenant_id changed: %s then %s", tenant, prov.TenantId)
					}
				}
				want := expectedListing(t, string(mt), tenant, strings.TrimSuffix(p.URL, "/v1"))
				var got any
				if err := json.Unmarshal(resp.Body, &got); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					g, _ := json.MarshalIndent(got, "", "  ")
					w, _ := json.MarshalIndent(want, "", "  ")
					t.Fatalf("listing differs\n got: %s\nwant: %s", g, w)
				}
			})
		}
	})
}

// TestDefaultProviderIcon: a provider that declares no icon is listed with the server's own,
// and that link answers with an image; the icon route takes GET and HEAD only.
func TestDefaultProviderIcon(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.KnowledgeKey)
		resp, err := c.ListAvailableModelsWithResponse(context.Background(), client.Llm)
		if err != nil || resp.JSON200 == nil {
			t.Fatalf("%v %s", err, resp.Body)
		}
		links := map[string]bool{}
		for _, prov := range resp.JSON200.Data {
			if prov.IconSmall == nil || prov.IconSmall["en_US"] == "" {
				t.Errorf("%s: icon_small %v", prov.Provider, prov.IconSmall)
			}
			for _, link := range prov.IconSmall {
				links[link] = true
			}
		}
		served := 0
		for link := range links {
			if strings.Contains(link, "icons.example.test") {
				continue // configured icons, not served here
			}
			served++
			for _, method := range []string{http.MethodGet, http.MethodHead} {
				req, _ := http.NewRequest(method, link, nil)
				r, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body := readAll(t, r)
				if r.StatusCode != 200 || r.Header.Get("Content-Type") != "image/svg+xml" {
					t.Errorf("%s %s: %d %s", method, link, r.StatusCode, r.Header.Get("Content-Type"))
				}
				if method == http.MethodGet && !strings.HasPrefix(string(body), "<svg ") {
					t.Errorf("GET %s is not an SVG image: %.60s", link, body)
				}
			}
			r, err := http.Post(link, "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			wantErr(t, "POST "+link, r, readAll(t, r), 405, "method_not_allowed")
		}
		if served == 0 {
			t.Errorf("no link to the default icon in the listing: %v", links)
		}
	})
}

// expectedListing reads testdata/models_<type>.json ({"data": []} when absent).
func expectedListing(t *testing.T, modelType, tenant, origin string) any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "models_"+modelType+".json"))
	if os.IsNotExist(err) {
		raw = []byte(`{"data": []}`)
	} else if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal([]byte(strings.NewReplacer("$TENANT", tenant, "$ORIGIN", origin).Replace(string(raw))), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// readAll reads and closes a response body.
func readAll(t *testing.T, r *http.Response) []byte {
	t.Helper()
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
