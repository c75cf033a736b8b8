// Package dsl reads and writes Dify DSL files, the YAML documents Dify's "Export DSL" produces,
// as Parley apps.
//
// Import reads versions 0.1.0 through 0.7.0 (Dify's import accepts any 0.x file; Parley refuses
// versions it has not seen), of the modes Parley runs, resolves every reference the file makes
// to things outside it (models, knowledge bases, tools) against this server, and either returns
// the whole app or fails with every problem found, each with its path in the file: an import
// is never partial. What the app model does not hold is kept, so that an export gives it back.
//
// Export writes an app as a DSL file in a canonical form: keys sorted as Dify writes them, every
// feature spelled out, references by Parley's names. Importing that file and exporting again
// gives the same bytes.
package dsl

import (
	"fmt"
	"strings"
)

// MaxSize is the largest DSL file accepted, Dify's limit.
const MaxSize = 10 << 20

// Problem is one reason an import cannot be done: where in the file, and what is wrong.
type Problem struct {
	// Path is the dotted path of the value in the file (model_config.model,
	// model_config.user_input_form[2].select.options); empty for the file as a whole.
	Path    string
	Message string
	// UnresolvedModel marks an llm reference the server cannot resolve: an import with
	// --model-fallback (Options.ModelFallback) replaces it instead of failing.
	UnresolvedModel bool
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// Error is a failed import: every problem found, in the order of the file.
type Error struct {
	Problems []Problem
}

// HasUnresolvedModel reports whether a fallback model would have solved one of the problems.
func (e *Error) HasUnresolvedModel() bool {
	for _, p := range e.Problems {
		if p.UnresolvedModel {
			return true
		}
	}
	return false
}

func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		return "cannot import the DSL file: " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cannot import the DSL file, %d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// NoteKind says what a note is about.
type NoteKind string

// Kinds of notes.
const (
	// NoteSubstituted: a model the server does not have was replaced by the fallback model.
	NoteSubstituted NoteKind = "substituted"
	// NoteMissingTool: a tool the server does not have was imported anyway (lenient import);
	// calling it fails at run time.
	NoteMissingTool NoteKind = "missing tool"
	// NoteNotRun: the app enables a feature Parley does not run yet; the setting is kept.
	NoteNotRun NoteKind = "not run"
	// NoteChanged: the import read something differently from how the file says it.
	NoteChanged NoteKind = "changed"
	// NoteUnmappedDataset: a dataset of the file is not a knowledge base of this server and
	// nothing maps it; retrieval leaves it out (App.UnmappedDatasets).
	NoteUnmappedDataset NoteKind = "unmapped dataset"
)

// Note is something an import did that the user should know about, without failing it.
type Note struct {
	Kind    NoteKind
	Path    string
	Message string
}

func (n Note) String() string {
	if n.Path == "" {
		return string(n.Kind) + ": " + n.Message
	}
	return string(n.Kind) + ": " + n.Path + ": " + n.Message
}

// problems collects problems and notes while a file is read.
type problems struct {
	list  []Problem
	notes []Note
}

func (p *problems) add(path, format string, args ...any) {
	p.list = append(p.list, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// addUnresolvedModel records an llm reference that did not resolve (see Problem.UnresolvedModel).
func (p *problems) addUnresolvedModel(path, why string) {
	p.list = append(p.list, Problem{Path: path, Message: why, UnresolvedModel: true})
}

func (p *problems) note(kind NoteKind, path, format string, args ...any) {
	p.notes = append(p.notes, Note{Kind: kind, Path: path, Message: fmt.Sprintf(format, args...)})
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	return &Error{Problems: p.list}
}

// join appends a key to a dotted path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// index appends a list index to a path.
func index(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}
