package conformance

import (
	"context"
	"encoding/json"
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
				want := expectedListing(t, string(mt), tenant)
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

// expectedListing reads testdata/models_<type>.json ({"data": []} when absent).
func expectedListing(t *testing.T, modelType, tenant string) any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "models_"+modelType+".json"))
	if os.IsNotExist(err) {
		raw = []byte(`{"data": []}`)
	} else if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(raw), "$TENANT", tenant)), &v); err != nil {
		t.Fatal(err)
	}
	return v
}
