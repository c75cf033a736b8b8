// Package client is the Go client of the Parley Service API, generated from api/openapi.yaml
// (client.gen.go), plus a hand-written streaming reader (stream.go) that turns a
// text/event-stream reply into typed events.
package client

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config client.cfg.yaml ../api/openapi.yaml
