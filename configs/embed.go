// Package configs ships the sample configuration file inside the binary.
//
// parley.yaml is the documented example of every configuration key; the
// server uses it when PARLEY_CONFIG is not set (see internal/config).
package configs

import _ "embed"

// Sample is the content of parley.yaml, the commented sample configuration.
//
//go:embed parley.yaml
var Sample []byte
