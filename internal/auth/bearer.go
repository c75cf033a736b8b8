package auth

import (
	"errors"
	"strings"
	"unicode"
)

// Errors from [ParseBearer]. Their texts are Dify's 401 messages, so the
// server can send them as they are. Dify's check is
// validate_and_get_api_token in api/controllers/service_api/wraps.py.
var (
	// ErrMissingBearer: no Authorization header, no space in it, or no
	// token after the scheme.
	ErrMissingBearer = errors.New("Authorization header must be provided and start with 'Bearer'") //nolint:staticcheck // ST1005: Dify's wire message.
	// ErrBearerScheme: a scheme other than Bearer (compared case-insensitively).
	ErrBearerScheme = errors.New("Authorization scheme must be 'Bearer'") //nolint:staticcheck // ST1005: Dify's wire message.
)

// ParseBearer extracts the token from an Authorization header value,
// following Dify: the header must contain a space, the first
// whitespace-separated word must be "bearer" in any case, and the token is
// the rest after the whitespace that follows it. An empty token (Dify
// answers "Bearer " with a server error) is ErrMissingBearer.
func ParseBearer(header string) (token string, err error) {
	if !strings.Contains(header, " ") {
		return "", ErrMissingBearer
	}
	rest := strings.TrimLeftFunc(header, unicode.IsSpace)
	i := strings.IndexFunc(rest, unicode.IsSpace)
	if i < 0 {
		// Only leading spaces, e.g. " Bearer".
		if strings.EqualFold(rest, "bearer") || rest == "" {
			return "", ErrMissingBearer
		}
		return "", ErrBearerScheme
	}
	scheme, token := rest[:i], strings.TrimLeftFunc(rest[i:], unicode.IsSpace)
	if !strings.EqualFold(scheme, "bearer") {
		return "", ErrBearerScheme
	}
	if token == "" {
		return "", ErrMissingBearer
	}
	return token, nil
}
