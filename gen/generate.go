// Package gen holds the server interface, models and embedded spec generated from
// api/openapi.yaml. Never edit the generated file: change the spec and run `make generate`.
package gen

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config server.cfg.yaml ../api/openapi.yaml
