package conformance

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestToolFileLinks checks the signed links to tool files on the running server, with the key
// it keeps in its data directory and the documented recipe (HMAC-SHA256 over
// "file-preview|<file id>|<timestamp>|<nonce>", URL-safe base64): no API key is needed, a
// correctly signed link to a file that does not exist is 404 (the signature was accepted), and
// expired, future-dated, forged and otherwise-keyed links are 403, each with the Error body and
// every response checked against the contract. The bytes of a real tool file, and the link an
// agent hands out, are covered in server/ and internal/agent: no tool of this server returns
// files.
func TestToolFileLinks(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		key, err := os.ReadFile(filepath.Join(p.engine.DataDir, "files-signing.key"))
		if err != nil || len(key) < 32 {
			t.Fatalf("signing key in the data directory: %d bytes, %v", len(key), err)
		}
		other := make([]byte, 32)
		_, _ = rand.Read(other)
		sign := func(k []byte, id string, ts int64, nonce string) string {
			m := hmac.New(sha256.New, k)
			m.Write([]byte("file-preview|" + id + "|" + strconv.FormatInt(ts, 10) + "|" + nonce))
			return base64.URLEncoding.EncodeToString(m.Sum(nil))
		}
		link := func(id string, ts int64, nonce, sig string) string {
			return "/files/tools/" + id + ".png?" + url.Values{"timestamp": {strconv.FormatInt(ts, 10)}, "nonce": {nonce}, "sign": {sig}}.Encode()
		}
		hc := newContractClient(t)
		id, now := uuid.NewString(), time.Now().Unix()
		old := now - 301
		for _, tc := range []struct {
			name   string
			path   string
			status int
			code   string
		}{
			{"signed, unknown file", link(id, now, "n1", sign(key, id, now, "n1")), 404, "not_found"},
			{"expired", link(id, old, "n1", sign(key, id, old, "n1")), 403, "forbidden"},
			{"dated ahead", link(id, now+3600, "n1", sign(key, id, now+3600, "n1")), 403, "forbidden"},
			{"nonce changed", link(id, now, "n2", sign(key, id, now, "n1")), 403, "forbidden"},
			{"another file's signature", link(id, now, "n1", sign(key, uuid.NewString(), now, "n1")), 403, "forbidden"},
			{"another key", link(id, now, "n1", sign(other, id, now, "n1")), 403, "forbidden"},
		} {
			resp, e := p.do(t, hc, call{method: http.MethodGet, path: tc.path})
			if resp.StatusCode != tc.status || e.Code != tc.code {
				t.Errorf("%s: %d %q (%q), want %d %q", tc.name, resp.StatusCode, e.Code, e.Message, tc.status, tc.code)
			}
		}
	})
}
