package controller

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fileLine is a line of a "Where things are" list: a file name first,
// after the list's indent or bullet.
var fileLine = regexp.MustCompile(`^\s*(?:-\s+)?([A-Za-z0-9_]+\.go)\b`)

// TestPackageDocsMapFiles: every package under controller/ whose doc.go
// has a "Where things are:" list names each of its production files
// there, and only files that exist.
func TestPackageDocsMapFiles(t *testing.T) {
	var checked int
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() == "testdata" {
			return err
		}
		listed, ok := docFiles(t, dir)
		if !ok {
			return nil
		}
		checked++
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		var files []string
		for _, e := range entries {
			if name := e.Name(); !e.IsDir() && strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
				files = append(files, name)
			}
		}
		var missing, gone []string
		for _, f := range files {
			if f != "doc.go" && !slices.Contains(listed, f) {
				missing = append(missing, f)
			}
		}
		for _, f := range listed {
			if !slices.Contains(files, f) {
				gone = append(gone, f)
			}
		}
		require.Empty(t, gone, "%s/doc.go names files that do not exist", dir)
		require.Empty(t, missing, "%s/doc.go does not name these files of its package", dir)
		return nil
	})
	require.NoError(t, err)
	require.Positive(t, checked, "no package doc with a list of its files")
}

// docFiles returns the files the "Where things are:" list of dir/doc.go
// names; ok is false when dir has no doc.go or its doc has no list.
func docFiles(t *testing.T, dir string) ([]string, bool) {
	path := filepath.Join(dir, "doc.go")
	if _, err := os.Stat(path); err != nil {
		return nil, false
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	if f.Doc == nil {
		return nil, false
	}
	_, list, ok := strings.Cut(f.Doc.Text(), "Where things are:\n")
	if !ok {
		return nil, false
	}
	var out []string
	for line := range strings.SplitSeq(list, "\n") {
		if m := fileLine.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	return out, true
}
