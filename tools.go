//go:build tools

// Package parley pins the code generator in go.mod; see gen/generate.go and client/generate.go.
package parley

import (
	_ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
)
