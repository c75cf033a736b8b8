package conformance

import (
	"fmt"
	"io"
	"net/http"
	"testing"
)

// rawDo sends req over the contract-checking client and returns the response with its body,
// read in full.
func rawDo(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := newContractClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, raw
}

// rawCall sends a JSON request (no body at all when body is "") with key to a path of p over the
// contract-checking client and returns the status and body.
func rawCall(t *testing.T, p *Parley, method, path, body, key string) (int, []byte) {
	t.Helper()
	req, err := newRequest(method, p.URL+path, body, key)
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = nil, 0
		req.Header.Del("Content-Type")
	}
	resp, raw := rawDo(t, req)
	return resp.StatusCode, raw
}

// formRequest is a multipart POST of parts to url with key.
func formRequest(t *testing.T, url, key string, parts ...part) *http.Request {
	t.Helper()
	body, ct := form(t, parts...)
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", ct)
	return req
}

// httpTranscript is a response as the golden files pin it: the status, the content type, a blank
// line and the body.
func httpTranscript(resp *http.Response, raw []byte) string {
	return fmt.Sprintf("HTTP %d %s\n\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
}
