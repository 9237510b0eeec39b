// Package documents is where document paths (interface 2.2, CONTRACT §7)
// meet object storage: the one validator every path field uses, the object
// key a path names, and the optional existence check through gocloud.dev/blob.
package documents

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:///dir buckets (local runs, tests)
	_ "gocloud.dev/blob/s3blob"   // s3://bucket buckets

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Validate is the rule set of every field that holds a document path. It
// is dataimport.ValidateDocumentPath (the request validators call that
// directly, being free of I/O); this package re-exports it for callers that
// hold paths outside a request body.
func Validate(p string) (code string, ok bool) { return dataimport.ValidateDocumentPath(p) }

// ValidatePDF is Validate for fields that must name a PDF (statement_path).
func ValidatePDF(p string) (code string, ok bool) { return dataimport.ValidatePDFDocumentPath(p) }

// Key is the object key, inside the instance's bucket, of path p for a
// supplier whose configured root is root: "<root>/<p>". The full location
// is therefore <bucket>/<root>/<p> (interface 2.2). p must be valid.
func Key(root, p string) string {
	root = strings.Trim(root, "/")
	if root == "" {
		return p
	}
	return root + "/" + p
}

// Ref is one path of a request to check, with the attr it is reported on.
type Ref struct {
	Attr string
	Path string
}

// Store answers whether documents exist. A nil Store, or one opened with an
// empty URL, checks nothing (DOCUMENT_STORE_URL unset: CONTRACT §1).
type Store struct {
	bucket *blob.Bucket
}

// Open opens the bucket at url (DOCUMENT_STORE_URL: s3://bucket?region=...,
// file:///dir). An empty url gives a Store that checks nothing. The bucket
// is closed when ctx ends.
func Open(ctx context.Context, url string) (*Store, error) {
	if url == "" {
		return &Store{}, nil
	}
	b, err := blob.OpenBucket(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("DOCUMENT_STORE_URL: %w", err)
	}
	context.AfterFunc(ctx, func() { _ = b.Close() })
	return &Store{bucket: b}, nil
}

// Enabled reports whether existence is checked.
func (s *Store) Enabled() bool { return s != nil && s.bucket != nil }

// Exists reports whether the document p of a supplier with root exists.
func (s *Store) Exists(ctx context.Context, root, p string) (bool, error) {
	if !s.Enabled() {
		return true, nil
	}
	ok, err := s.bucket.Exists(ctx, Key(root, p))
	if err != nil {
		return false, fmt.Errorf("check document %q: %w", Key(root, p), err)
	}
	return ok, nil
}

// maxParallelChecks bounds the lookups one request makes at once.
const maxParallelChecks = 8

// Check returns one path_does_not_exist_in_file_store field error per ref
// whose object is missing, in refs order; nil when the Store is disabled.
// The paths must already be valid. A path named several times is looked up
// once. An error means the store could not be asked.
func (s *Store) Check(ctx context.Context, root string, refs []Ref) ([]dataimport.FieldError, error) {
	if !s.Enabled() || len(refs) == 0 {
		return nil, nil
	}
	var paths []string // distinct, first-use order
	index := map[string]int{}
	for _, r := range refs {
		if _, seen := index[r.Path]; !seen {
			index[r.Path] = len(paths)
			paths = append(paths, r.Path)
		}
	}
	exists := make([]bool, len(paths))
	failed := make([]error, len(paths))
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxParallelChecks)
	for i, p := range paths {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			exists[i], failed[i] = s.Exists(ctx, root, p)
		}()
	}
	wg.Wait()
	for _, err := range failed {
		if err != nil {
			return nil, err
		}
	}
	var errs []dataimport.FieldError
	for _, r := range refs {
		if !exists[index[r.Path]] {
			errs = append(errs, dataimport.FieldError{Attr: r.Attr, Code: dataimport.CodePathDoesNotExistInFileStore,
				Detail: fmt.Sprintf("No document exists at %q in the file store.", r.Path)})
		}
	}
	return errs, nil
}

// Close releases the bucket (also done when Open's ctx ends).
func (s *Store) Close() error {
	if !s.Enabled() {
		return nil
	}
	return s.bucket.Close()
}
