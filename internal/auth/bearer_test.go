package auth

import "testing"

func TestParseBearer(t *testing.T) {
	t.Parallel()
	const tok = "app-AbCdEfGh"
	for header, want := range map[string]struct {
		token string
		err   error
	}{
		"Bearer " + tok:        {tok, nil},
		"bearer " + tok:        {tok, nil},
		"BEARER " + tok:        {tok, nil},
		"Bearer   " + tok:      {tok, nil}, // Python's split(None, 1) eats the run of spaces
		"Bearer \t" + tok:      {tok, nil},
		"  Bearer " + tok:      {tok, nil},
		"Bearer " + tok + " x": {tok + " x", nil}, // the rest is the token; it will fail lookup
		"":                     {"", ErrMissingBearer},
		"Bearer":               {"", ErrMissingBearer},
		"Bearer\t" + tok:       {"", ErrMissingBearer}, // Dify requires a literal space
		tok:                    {"", ErrMissingBearer},
		"Bearer ":              {"", ErrMissingBearer},
		"Bearer    ":           {"", ErrMissingBearer},
		" Bearer":              {"", ErrMissingBearer},
		" ":                    {"", ErrMissingBearer},
		"Basic dXNlcjpwYXNz":   {"", ErrBearerScheme},
		"Token " + tok:         {"", ErrBearerScheme},
		"Bearer: " + tok:       {"", ErrBearerScheme},
		"Bearer-" + tok + " x": {"", ErrBearerScheme},
		" Basic":               {"", ErrBearerScheme},
		"Bearertoken " + tok:   {"", ErrBearerScheme},
		"\u00a0Bearer " + tok:  {tok, nil}, // unicode space, as Python's str.split
		"Bearer \u00a0" + tok:  {tok, nil},
		"Bearer\u00a0" + tok:   {"", ErrMissingBearer}, // no ASCII space at all
	} {
		got, err := ParseBearer(header)
		if got != want.token || err != want.err { //nolint:errorlint // exact sentinels
			t.Errorf("ParseBearer(%q) = %q, %v; want %q, %v", header, got, err, want.token, want.err)
		}
	}
	// The messages are Dify's, byte for byte.
	if ErrMissingBearer.Error() != "Authorization header must be provided and start with 'Bearer'" {
		t.Errorf("ErrMissingBearer text = %q", ErrMissingBearer)
	}
	if ErrBearerScheme.Error() != "Authorization scheme must be 'Bearer'" {
		t.Errorf("ErrBearerScheme text = %q", ErrBearerScheme)
	}
}
