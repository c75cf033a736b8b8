package client

// This file is hand-written; everything else in the package is generated from api/openapi.yaml.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// New returns a client of the Parley Service API at baseURL, the server's address with or without
// its /v1 prefix: "http://127.0.0.1:5001", "http://127.0.0.1:5001/" and
// "http://127.0.0.1:5001/v1" reach the same API. A server behind a path prefix is given with it
// ("https://example.test/parley", /v1 added). Pass WithAPIKey to send a key with every request.
//
// New is NewClientWithResponses with the base address normalised; that also applies to an
// address given with WithBaseURL. NewClient and NewClientWithResponses take the address as is,
// /v1 included.
func New(baseURL string, opts ...ClientOption) (*ClientWithResponses, error) {
	opts = append(append([]ClientOption(nil), opts...), normaliseServer)
	return NewClientWithResponses(baseURL, opts...)
}

// WithAPIKey sends key as `Authorization: Bearer <key>` with every request: an app key (`app-…`)
// for the operations of an app, or a knowledge key for the /datasets operations. A request
// editor passed to one call runs after it, so it can still replace the header for that call.
func WithAPIKey(key string) ClientOption {
	return func(c *Client) error {
		if key == "" {
			return errors.New("parley: empty API key")
		}
		header := "Bearer " + key
		c.RequestEditors = append(c.RequestEditors, func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", header)
			return nil
		})
		return nil
	}
}

// normaliseServer turns the client's server address into the API base every generated operation
// path is resolved against: an http(s) URL whose path ends in /v1/.
func normaliseServer(c *Client) error {
	u, err := url.Parse(c.Server)
	if err != nil {
		return fmt.Errorf("parley: base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("parley: base URL %q: want http://host[:port] or https://host[:port], optionally with a path", c.Server)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("parley: base URL %q: no query or fragment allowed", c.Server)
	}
	path := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(path, "/v1") {
		path += "/v1"
	}
	u.Path, u.RawPath = path+"/", ""
	c.Server = u.String()
	return nil
}
