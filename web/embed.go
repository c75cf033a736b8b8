// Package web holds the built front end of the app pages (web/dist, from web/src by `make
// web`), embedded in the binary: no Node is needed at run time. server/pages.go serves it.
package web

import "embed"

// Dist is web/dist: manifest.json (the hashed names of the pages' script and style sheet),
// assets/ and embed.min.js.
//
//go:embed dist
var Dist embed.FS
