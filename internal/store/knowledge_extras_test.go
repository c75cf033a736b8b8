package store

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"
)

func tagID(t Tag) string             { return t.ID }
func tagName(t Tag) string           { return t.Name }
func fieldID(f MetadataField) string { return f.ID }

// wantValidationError fails unless err is an error that is neither ErrNotFound nor ErrConflict.
func wantValidationError(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
		t.Errorf("%s: err = %v, want a validation error", what, err)
	}
}

func TestTags(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		base := time.Unix(1_700_000_000, 0).UTC()
		create := func(name string, at time.Time) Tag {
			t.Helper()
			tag, err := s.CreateTag(ctx, Tag{Name: name, CreatedBy: "acct-1", CreatedAt: at})
			if err != nil {
				t.Fatalf("CreateTag(%q): %v", name, err)
			}
			return tag
		}
		alpha := create("Alpha", base)
		beta := create("beta", base.Add(time.Second))
		gamma := create("Gamma", base.Add(2*time.Second))
		umlaut := create("Ärger", base.Add(3*time.Second))
		if alpha.ID == "" || alpha.Type != TagTypeKnowledge || alpha.CreatedBy != "acct-1" || !alpha.CreatedAt.Equal(base) || alpha.BindingCount != 0 {
			t.Fatalf("CreateTag = %+v", alpha)
		}
		if got, err := s.Tag(ctx, alpha.ID); err != nil || got != alpha {
			t.Fatalf("Tag(alpha) = %+v, %v; want %+v", got, err, alpha)
		}

		// Errors.
		if _, err := s.CreateTag(ctx, Tag{Name: "Alpha"}); !errors.Is(err, ErrConflict) {
			t.Errorf("duplicate name: err = %v, want ErrConflict", err)
		}
		_, err := s.CreateTag(ctx, Tag{Name: " "})
		wantValidationError(t, "empty name", err)
		_, err = s.CreateTag(ctx, Tag{Name: "app tag", Type: "app"})
		wantValidationError(t, "type app", err)
		if _, err := s.Tag(ctx, NewID()); !errors.Is(err, ErrNotFound) {
			t.Errorf("Tag(unknown): err = %v, want ErrNotFound", err)
		}

		// Bindings: unknown tags, repeats and present bindings are skipped.
		ds1, ds2, ds3 := NewID(), NewID(), NewID()
		if err := s.BindTags(ctx, []string{alpha.ID, beta.ID, NewID(), alpha.ID, gamma.ID}, ds1, "acct-1"); err != nil {
			t.Fatal(err)
		}
		if err := s.BindTags(ctx, []string{alpha.ID, beta.ID}, ds1, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.BindTags(ctx, []string{alpha.ID}, ds2, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.BindTags(ctx, nil, ds3, ""); err != nil {
			t.Errorf("BindTags(nil) = %v", err)
		}
		wantValidationError(t, "bind without dataset", s.BindTags(ctx, []string{alpha.ID}, "", ""))

		list, err := s.ListTags(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(list, tagID), []string{umlaut.ID, gamma.ID, beta.ID, alpha.ID}; !slices.Equal(got, want) {
			t.Fatalf("ListTags = %v, want newest first %v", got, want)
		}
		counts := map[string]int{}
		for _, tag := range list {
			counts[tag.Name] = tag.BindingCount
		}
		if want := map[string]int{"Alpha": 2, "beta": 1, "Gamma": 1, "Ärger": 0}; !maps.Equal(counts, want) {
			t.Errorf("binding counts = %v, want %v", counts, want)
		}
		for keyword, want := range map[string][]string{
			"ALP":     {"Alpha"},
			"a":       {"Gamma", "beta", "Alpha"},
			"äRG":     {"Ärger"}, // non-ASCII case folding, the same on both engines
			"nothing": nil,
			"%":       nil,
		} {
			got, err := s.ListTags(ctx, keyword)
			if err != nil || !slices.Equal(ids(got, tagName), want) {
				t.Errorf("ListTags(%q) = %v, %v; want %v", keyword, ids(got, tagName), err, want)
			}
		}

		// Per dataset, by name in byte order ("Gamma" before "beta", whatever the locale).
		byDataset, err := s.DatasetTags(ctx, []string{ds1, ds2, ds3, ds1})
		if err != nil {
			t.Fatal(err)
		}
		if len(byDataset) != 2 {
			t.Errorf("DatasetTags has %d datasets, want 2 (ds3 has no tags)", len(byDataset))
		}
		if got, want := ids(byDataset[ds1], tagName), []string{"Alpha", "Gamma", "beta"}; !slices.Equal(got, want) {
			t.Errorf("ds1 tags = %v, want %v", got, want)
		}
		if got := byDataset[ds2]; len(got) != 1 || got[0].ID != alpha.ID || got[0].BindingCount != 2 || got[0].CreatedBy != "acct-1" {
			t.Errorf("ds2 tags = %+v, want alpha with 2 bindings", got)
		}

		// Rename.
		renamed, err := s.RenameTag(ctx, alpha.ID, "Alpha 2")
		if err != nil || renamed.Name != "Alpha 2" || renamed.ID != alpha.ID || renamed.BindingCount != 2 || !renamed.CreatedAt.Equal(base) {
			t.Fatalf("RenameTag = %+v, %v", renamed, err)
		}
		if _, err := s.RenameTag(ctx, alpha.ID, "beta"); !errors.Is(err, ErrConflict) {
			t.Errorf("rename to a taken name: err = %v, want ErrConflict", err)
		}
		if _, err := s.RenameTag(ctx, NewID(), "x"); !errors.Is(err, ErrNotFound) {
			t.Errorf("rename unknown: err = %v, want ErrNotFound", err)
		}
		_, err = s.RenameTag(ctx, alpha.ID, "")
		wantValidationError(t, "rename to empty", err)

		// Unbind: unknown and unbound tags are skipped.
		if err := s.UnbindTags(ctx, []string{alpha.ID, NewID(), umlaut.ID}, ds1); err != nil {
			t.Fatal(err)
		}
		if err := s.UnbindTags(ctx, nil, ds1); err != nil {
			t.Errorf("UnbindTags(nil) = %v", err)
		}
		byDataset, err = s.DatasetTags(ctx, []string{ds1, ds2})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(byDataset[ds1], tagName), []string{"Gamma", "beta"}; !slices.Equal(got, want) {
			t.Errorf("ds1 tags after unbind = %v, want %v", got, want)
		}
		if got := byDataset[ds2]; len(got) != 1 || got[0].BindingCount != 1 {
			t.Errorf("ds2 tags after unbind = %+v, want alpha with 1 binding", got)
		}

		// Delete takes the bindings with it.
		if err := s.DeleteTag(ctx, beta.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteTag(ctx, beta.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("second delete: err = %v, want ErrNotFound", err)
		}
		if _, err := s.Tag(ctx, beta.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("Tag after delete: err = %v, want ErrNotFound", err)
		}
		byDataset, err = s.DatasetTags(ctx, []string{ds1})
		if err != nil || !slices.Equal(ids(byDataset[ds1], tagName), []string{"Gamma"}) {
			t.Errorf("ds1 tags after delete = %v, %v; want [Gamma]", ids(byDataset[ds1], tagName), err)
		}
		// The name is free again.
		if _, err := s.CreateTag(ctx, Tag{Name: "beta"}); err != nil {
			t.Errorf("recreate deleted name: %v", err)
		}

		// Deleting a dataset's extras drops its bindings only.
		if err := s.deleteDatasetExtras(ctx, s.conn(), ds1); err != nil {
			t.Fatal(err)
		}
		byDataset, err = s.DatasetTags(ctx, []string{ds1, ds2})
		if err != nil || len(byDataset[ds1]) != 0 || len(byDataset[ds2]) != 1 {
			t.Errorf("after deleteDatasetExtras(ds1): %+v, %v", byDataset, err)
		}
	})
}

func TestRetrieverResources(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		msgs := newMessages(t, s, f.app, f.alice, 3)
		at := time.Unix(1_700_000_000, 0).UTC()
		full := RetrieverResource{
			ID: NewID(), MessageID: msgs[0].ID, Position: 2, DatasetID: NewID(), DatasetName: "Docs",
			DocumentID: NewID(), DocumentName: "guide.md", DataSourceType: "upload_file", SegmentID: NewID(),
			SegmentPosition: 7, IndexNodeHash: "abc123", Content: "chunk text", Score: 0.8125, HitCount: 3,
			WordCount: 10, CreatedAt: at,
		}
		in := []RetrieverResource{
			full,
			{MessageID: msgs[0].ID, Position: 1, Content: "first"},
			{MessageID: msgs[1].ID, Position: 1, Content: "other message"},
			{MessageID: msgs[0].ID, Position: 3, Content: "third"},
		}
		if err := s.AddRetrieverResources(ctx, in); err != nil {
			t.Fatal(err)
		}
		got, err := s.RetrieverResources(ctx, []string{msgs[0].ID, msgs[1].ID, msgs[2].ID, NewID()})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Errorf("RetrieverResources has %d messages, want 2", len(got))
		}
		first := got[msgs[0].ID]
		var positions []int
		for _, r := range first {
			positions = append(positions, r.Position)
		}
		if !slices.Equal(positions, []int{1, 2, 3}) {
			t.Fatalf("positions = %v, want [1 2 3]", positions)
		}
		if first[1] != full {
			t.Errorf("round trip = %+v, want %+v", first[1], full)
		}
		if r := first[0]; r.ID == "" || r.ID == full.ID || r.CreatedAt.IsZero() || r.Content != "first" {
			t.Errorf("defaults = %+v, want a new id and a creation time", r)
		}
		if r := got[msgs[1].ID]; len(r) != 1 || r[0].Content != "other message" {
			t.Errorf("second message = %+v", r)
		}

		// All or none: an unknown message fails the whole batch.
		err = s.AddRetrieverResources(ctx, []RetrieverResource{
			{MessageID: msgs[2].ID, Position: 1},
			{MessageID: NewID(), Position: 2},
		})
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown message: err = %v, want ErrNotFound", err)
		}
		if got, err := s.RetrieverResources(ctx, []string{msgs[2].ID}); err != nil || len(got) != 0 {
			t.Errorf("after failed batch: %+v, %v; want nothing stored", got, err)
		}
		if err := s.AddRetrieverResources(ctx, []RetrieverResource{{ID: full.ID, MessageID: msgs[2].ID}}); !errors.Is(err, ErrConflict) {
			t.Errorf("reused id: err = %v, want ErrConflict", err)
		}
		wantValidationError(t, "missing message id", s.AddRetrieverResources(ctx, []RetrieverResource{{Position: 1}}))
		if err := s.AddRetrieverResources(ctx, nil); err != nil {
			t.Errorf("AddRetrieverResources(nil) = %v", err)
		}
		if got, err := s.RetrieverResources(ctx, nil); err != nil || len(got) != 0 {
			t.Errorf("RetrieverResources(nil) = %v, %v", got, err)
		}
	})
}

func TestMetadataJSONRewrite(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{}`: `{}`,
		` { "b" : 1 , "a":{"x": [1, 2]} ,"<&>":"é"} `: `{"b":1,"a":{"x": [1, 2]},"<&>":"é"}`,
		`{"k\"ey":null}`: `{"k\"ey":null}`,
	} {
		ms, ok, err := parseJSONObject(in)
		if err != nil || !ok {
			t.Errorf("parseJSONObject(%s) = %v, %v", in, ok, err)
			continue
		}
		got, err := formatJSONObject(ms)
		if err != nil || got != want {
			t.Errorf("round trip of %s = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{`null`, `[1]`, `"s"`, `3`} {
		if _, ok, err := parseJSONObject(in); ok || err != nil {
			t.Errorf("parseJSONObject(%s) = %v, %v; want not an object, no error", in, ok, err)
		}
	}
	for _, in := range []string{``, `{`, `{"a":}`, `{} x`} {
		if _, _, err := parseJSONObject(in); err == nil {
			t.Errorf("parseJSONObject(%q): want error", in)
		}
	}
}

func TestMetadataFields(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds, err := s.CreateDataset(ctx, Dataset{Name: "kb", CreatedBy: "acct-1"})
		if err != nil {
			t.Fatal(err)
		}
		other, err := s.CreateDataset(ctx, Dataset{Name: "other kb", CreatedBy: "acct-1"})
		if err != nil {
			t.Fatal(err)
		}
		newDoc := func(datasetID, name, meta string) string {
			t.Helper()
			d := Document{DatasetID: datasetID, Name: name, Batch: "b", CreatedBy: "acct-1"}
			if meta != "" {
				d.DocMetadata = json.RawMessage(meta)
			}
			d, err := s.CreateDocument(ctx, d)
			if err != nil {
				t.Fatalf("CreateDocument(%s): %v", name, err)
			}
			return d.ID
		}
		docMeta := func(datasetID, id string) string {
			t.Helper()
			d, err := s.Document(ctx, datasetID, id)
			if err != nil {
				t.Fatal(err)
			}
			return string(d.DocMetadata)
		}

		at := time.Unix(1_700_000_000, 0).UTC()
		create := func(f MetadataField) MetadataField {
			t.Helper()
			f, err := s.CreateMetadataField(ctx, f)
			if err != nil {
				t.Fatalf("CreateMetadataField(%q): %v", f.Name, err)
			}
			return f
		}
		author := create(MetadataField{DatasetID: ds.ID, Name: "author", Type: MetadataTypeString, CreatedBy: "acct-1", CreatedAt: at})
		year := create(MetadataField{DatasetID: ds.ID, Name: "year", Type: MetadataTypeNumber, CreatedAt: at.Add(time.Second)})
		published := create(MetadataField{DatasetID: ds.ID, Name: "published", Type: MetadataTypeTime, CreatedAt: at.Add(2 * time.Second)})
		otherAuthor := create(MetadataField{DatasetID: other.ID, Name: "author", Type: MetadataTypeString})
		if author.ID == "" || author.CreatedBy != "acct-1" || !author.CreatedAt.Equal(at) || !author.UpdatedAt.Equal(at) {
			t.Fatalf("CreateMetadataField = %+v", author)
		}
		if got, err := s.MetadataField(ctx, ds.ID, author.ID); err != nil || got != author {
			t.Fatalf("MetadataField = %+v, %v; want %+v", got, err, author)
		}
		if _, err := s.MetadataField(ctx, other.ID, author.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("MetadataField of another dataset: err = %v, want ErrNotFound", err)
		}

		// Errors.
		if _, err := s.CreateMetadataField(ctx, MetadataField{DatasetID: ds.ID, Name: "author", Type: MetadataTypeNumber}); !errors.Is(err, ErrConflict) {
			t.Errorf("duplicate name: err = %v, want ErrConflict", err)
		}
		if _, err := s.CreateMetadataField(ctx, MetadataField{DatasetID: NewID(), Name: "x", Type: MetadataTypeString}); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown dataset: err = %v, want ErrNotFound", err)
		}
		for name, f := range map[string]MetadataField{
			"empty name": {DatasetID: ds.ID, Name: "", Type: MetadataTypeString},
			"bad type":   {DatasetID: ds.ID, Name: "x", Type: "boolean"},
			"no type":    {DatasetID: ds.ID, Name: "x"},
			"no dataset": {Name: "x", Type: MetadataTypeString},
		} {
			_, err := s.CreateMetadataField(ctx, f)
			wantValidationError(t, name, err)
		}

		fields, err := s.ListMetadataFields(ctx, ds.ID)
		if err != nil || !slices.Equal(ids(fields, fieldID), []string{author.ID, year.ID, published.ID}) {
			t.Fatalf("ListMetadataFields = %v, %v; want creation order", ids(fields, fieldID), err)
		}

		// Values live in the documents' doc_metadata.
		d1 := newDoc(ds.ID, "d1", `{"year": 2020, "author": "Ann", "note": "<a & b>"}`)
		d2 := newDoc(ds.ID, "d2", `{"author":"Bob"}`)
		d3 := newDoc(ds.ID, "d3", "")
		d4 := newDoc(ds.ID, "d4", `{}`)
		d5 := newDoc(ds.ID, "d5", `{"author":"Cy","writer":"stale"}`)
		o1 := newDoc(other.ID, "o1", `{"author":"Zed"}`)

		counts, err := s.MetadataFieldCounts(ctx, ds.ID)
		if want := map[string]int{author.ID: 3, year.ID: 1, published.ID: 0}; err != nil || !maps.Equal(counts, want) {
			t.Errorf("MetadataFieldCounts = %v, %v; want %v", counts, err, want)
		}
		if counts, err := s.MetadataFieldCounts(ctx, NewID()); err != nil || len(counts) != 0 {
			t.Errorf("MetadataFieldCounts(unknown) = %v, %v; want empty", counts, err)
		}

		// Rename: the field and the key in every document of the dataset, other keys untouched.
		renamed, err := s.RenameMetadataField(ctx, ds.ID, author.ID, "writer")
		if err != nil || renamed.Name != "writer" || renamed.ID != author.ID || renamed.Type != MetadataTypeString || !renamed.CreatedAt.Equal(at) {
			t.Fatalf("RenameMetadataField = %+v, %v", renamed, err)
		}
		for id, want := range map[string]string{
			d1: `{"year":2020,"writer":"Ann","note":"<a & b>"}`,
			d2: `{"writer":"Bob"}`,
			d3: "",
			d4: `{}`,
			d5: `{"writer":"Cy"}`,
		} {
			if got := docMeta(ds.ID, id); got != want {
				t.Errorf("doc_metadata after rename = %s, want %s", got, want)
			}
		}
		if got := docMeta(other.ID, o1); got != `{"author":"Zed"}` {
			t.Errorf("other dataset's document changed: %s", got)
		}
		if got, err := s.MetadataField(ctx, other.ID, otherAuthor.ID); err != nil || got.Name != "author" {
			t.Errorf("other dataset's field = %+v, %v", got, err)
		}

		// A failed rename changes nothing.
		if _, err := s.RenameMetadataField(ctx, ds.ID, author.ID, "year"); !errors.Is(err, ErrConflict) {
			t.Errorf("rename to a taken name: err = %v, want ErrConflict", err)
		}
		if got := docMeta(ds.ID, d2); got != `{"writer":"Bob"}` {
			t.Errorf("doc_metadata after failed rename = %s", got)
		}
		if _, err := s.RenameMetadataField(ctx, other.ID, author.ID, "x"); !errors.Is(err, ErrNotFound) {
			t.Errorf("rename through another dataset: err = %v, want ErrNotFound", err)
		}
		_, err = s.RenameMetadataField(ctx, ds.ID, author.ID, "")
		wantValidationError(t, "rename to empty", err)
		if same, err := s.RenameMetadataField(ctx, ds.ID, author.ID, "writer"); err != nil || same.Name != "writer" {
			t.Errorf("rename to the same name = %+v, %v", same, err)
		}

		counts, err = s.MetadataFieldCounts(ctx, ds.ID)
		if want := map[string]int{author.ID: 3, year.ID: 1, published.ID: 0}; err != nil || !maps.Equal(counts, want) {
			t.Errorf("MetadataFieldCounts after rename = %v, %v; want %v", counts, err, want)
		}

		// Delete: the field and its values.
		if err := s.DeleteMetadataField(ctx, ds.ID, year.ID); err != nil {
			t.Fatal(err)
		}
		if got := docMeta(ds.ID, d1); got != `{"writer":"Ann","note":"<a & b>"}` {
			t.Errorf("doc_metadata after delete = %s", got)
		}
		if err := s.DeleteMetadataField(ctx, ds.ID, year.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("second delete: err = %v, want ErrNotFound", err)
		}
		if err := s.DeleteMetadataField(ctx, other.ID, author.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("delete through another dataset: err = %v, want ErrNotFound", err)
		}
		fields, err = s.ListMetadataFields(ctx, ds.ID)
		if err != nil || !slices.Equal(ids(fields, fieldID), []string{author.ID, published.ID}) {
			t.Errorf("ListMetadataFields after delete = %v, %v", ids(fields, fieldID), err)
		}

		// Deleting a dataset takes its fields and tag bindings with it.
		tag, err := s.CreateTag(ctx, Tag{Name: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.BindTags(ctx, []string{tag.ID}, other.ID, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.BindTags(ctx, []string{tag.ID}, ds.ID, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteDataset(ctx, other.ID); err != nil {
			t.Fatal(err)
		}
		if fields, err := s.ListMetadataFields(ctx, other.ID); err != nil || len(fields) != 0 {
			t.Errorf("fields of a deleted dataset = %v, %v", fields, err)
		}
		if got, err := s.Tag(ctx, tag.ID); err != nil || got.BindingCount != 1 {
			t.Errorf("tag after dataset delete = %+v, %v; want 1 binding left", got, err)
		}
		if fields, err := s.ListMetadataFields(ctx, ds.ID); err != nil || len(fields) != 2 {
			t.Errorf("fields of the kept dataset = %v, %v", fields, err)
		}
	})
}
