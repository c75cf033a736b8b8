// Package api carries the contract, api/openapi.yaml, inside the binary so that the request and
// response validators load exactly the document the code was generated from.
package api

import (
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

// Document is api/openapi.yaml, byte for byte.
//
//go:embed openapi.yaml
var Document []byte

// Load parses and validates the embedded contract. Each call returns a fresh document, so a
// caller may adjust it (for example its servers) without affecting others.
func Load() (*openapi3.T, error) {
	DefineFormats()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(Document)
	if err != nil {
		return nil, fmt.Errorf("load api/openapi.yaml: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("validate api/openapi.yaml: %w", err)
	}
	return doc, nil
}

var formatsOnce sync.Once

// DefineFormats makes kin-openapi check the string formats the contract uses: `uuid` (the
// 8-4-4-4-12 hex form of RFC 9562, any version) and `uri` (an absolute URL). kin-openapi keeps format
// validators in a process-wide registry, so this is done once.
func DefineFormats() {
	formatsOnce.Do(func() {
		openapi3.DefineStringFormatCallback("uuid", checkUUID)
		openapi3.DefineStringFormatCallback("uri", func(s string) error {
			u, err := url.Parse(s)
			if err != nil {
				return err
			}
			if u.Scheme == "" || (u.Host == "" && u.Opaque == "") {
				return errors.New("not an absolute URL")
			}
			return nil
		})
	})
}

// checkUUID accepts the canonical textual form of a UUID. It is on the path of every streamed
// event, so it is a plain scan rather than the regular expression kin-openapi offers (4x faster).
func checkUUID(s string) error {
	if len(s) != 36 {
		return errors.New("not a UUID")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return errors.New("not a UUID")
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return errors.New("not a UUID")
			}
		}
	}
	return nil
}
