package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// TestSBOMAndDigest builds an image holding this test's own binary and a
// data file, and checks the digest printed and written next to the archive
// against the archive's index, and the SBOM against the binary's build
// information: every module compiled in, the standard library, no
// component for the data file.
func TestSBOMAndDigest(t *testing.T) {
	exe, err := os.Executable()
	must(t, err)
	dir := t.TempDir()
	data := filepath.Join(dir, "ca.crt")
	must(t, os.WriteFile(data, []byte("not a binary"), 0o644))
	out := filepath.Join(dir, "test-amd64.tar")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-out", out, "-name", "example.com/test/image:1.2.3", "-platform", "linux/amd64",
		"-entrypoint", "/bin/test", "-file", "/bin/test=" + exe, "-file", "/etc/ssl/ca.crt=" + data}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}

	digest := manifestDigest(t, out)
	if want := "example.com/test/image:1.2.3 linux/amd64 " + digest + "\n"; stdout.String() != want {
		t.Errorf("printed %q, want %q", stdout.String(), want)
	}
	written, err := os.ReadFile(filepath.Join(dir, "test-amd64.digest"))
	must(t, err)
	if string(written) != digest+"\n" {
		t.Errorf("test-amd64.digest holds %q, want %q", written, digest+"\n")
	}

	f, err := os.Open(filepath.Join(dir, "test-amd64.cdx.json"))
	must(t, err)
	defer f.Close()
	var bom cdx.BOM
	must(t, cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom))
	img := bom.Metadata.Component
	if img.Name != "example.com/test/image" || img.Version != "1.2.3" || !strings.HasPrefix(img.PackageURL, "pkg:oci/image@"+strings.Replace(digest, ":", "%3A", 1)+"?") {
		t.Errorf("image component %+v, want example.com/test/image 1.2.3 at %s", img, digest)
	}
	versions := map[string]string{}
	for _, c := range *bom.Components {
		versions[c.Name] = c.Version
	}
	if _, ok := versions["ca.crt"]; ok {
		t.Error("a component for a data file")
	}
	if _, ok := versions["test"]; !ok {
		t.Errorf("no component for /bin/test: %v", versions)
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok || len(bi.Deps) == 0 {
		t.Fatal("the test binary has no module dependencies to look for")
	}
	want := map[string]string{"stdlib": strings.TrimPrefix(bi.GoVersion, "go"), bi.Main.Path: moduleVersion(bi.Main.Version)}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		want[d.Path] = d.Version
	}
	for name, v := range want {
		got, ok := versions[name]
		if !ok || got != v {
			t.Errorf("module %s: SBOM has %q (listed: %v), want %q", name, got, ok, v)
		}
	}
	for _, d := range *bom.Dependencies {
		if d.Ref == "file:/bin/test" && len(*d.Dependencies) != len(want) {
			t.Errorf("/bin/test depends on %d components, want %d", len(*d.Dependencies), len(want))
		}
	}
}

// TestNotGoBinary: an executable the SBOM cannot describe is refused.
func TestNotGoBinary(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	must(t, os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755))
	var stdout, stderr bytes.Buffer
	code := run([]string{"-out", filepath.Join(dir, "x.tar"), "-name", "x:1", "-entrypoint", "/bin/script", "-file", "/bin/script=" + script}, &stdout, &stderr)
	want := "imagebuild: " + filepath.Join(dir, "x.tar") + ": an executable of the image must be a Go binary: could not read Go build info from " + script + ": unrecognized file format\n"
	if code != 1 || stderr.String() != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, stderr.String(), want)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.tar")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an archive was written: %v", err)
	}
}

// manifestDigest returns the digest of the only manifest of the OCI
// archive's index.json.
func manifestDigest(t *testing.T, archive string) string {
	t.Helper()
	f, err := os.Open(archive)
	must(t, err)
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s has no index.json", archive)
		}
		must(t, err)
		if hdr.Name != "index.json" {
			continue
		}
		var index struct {
			Manifests []struct{ Digest string }
		}
		must(t, json.NewDecoder(tr).Decode(&index))
		if len(index.Manifests) != 1 {
			t.Fatalf("index.json has %d manifests", len(index.Manifests))
		}
		return index.Manifests[0].Digest
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
