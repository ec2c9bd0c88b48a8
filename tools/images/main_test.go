package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
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

// TestCmdDirsAndOwners builds an image as the Alertmanager one is built
// (a CMD, an empty directory, paths owned by nobody) and reads its config
// and layer back.
func TestCmdDirsAndOwners(t *testing.T) {
	exe, err := os.Executable()
	must(t, err)
	dir := t.TempDir()
	conf := filepath.Join(dir, "app.yml")
	must(t, os.WriteFile(conf, []byte("a: 1\n"), 0o644))
	out := filepath.Join(dir, "app-amd64.tar")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-out", out, "-name", "example.com/app:1", "-user", "65534:65534", "-workdir", "/data",
		"-entrypoint", "/bin/app", "-cmd", "--config=/etc/app/app.yml", "-cmd", "--data=/data",
		"-file", "/bin/app=" + exe, "-file", "/etc/app/app.yml=" + conf, "-dir", "/data",
		"-chown", "/etc/app=65534:65534", "-chown", "/data=65534:65534"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	cfg, layer := readArchive(t, out)
	if want := []string{"--config=/etc/app/app.yml", "--data=/data"}; !slices.Equal(cfg.Config.Cmd, want) {
		t.Errorf("Cmd %q, want %q", cfg.Config.Cmd, want)
	}
	if want := []string{"/bin/app"}; !slices.Equal(cfg.Config.Entrypoint, want) {
		t.Errorf("Entrypoint %q, want %q", cfg.Config.Entrypoint, want)
	}
	if cfg.Config.User != "65534:65534" || cfg.Config.WorkingDir != "/data" {
		t.Errorf("User %q, WorkingDir %q; want 65534:65534, /data", cfg.Config.User, cfg.Config.WorkingDir)
	}
	for _, tc := range []struct {
		name     string
		typ      byte
		uid, gid int
	}{
		{"bin/", tar.TypeDir, 0, 0},
		{"bin/app", tar.TypeReg, 0, 0},
		{"etc/", tar.TypeDir, 0, 0},
		{"etc/app/", tar.TypeDir, 65534, 65534},
		{"etc/app/app.yml", tar.TypeReg, 65534, 65534},
		{"etc/passwd", tar.TypeReg, 0, 0},
		{"data/", tar.TypeDir, 65534, 65534},
	} {
		h, ok := layer[tc.name]
		if !ok {
			t.Errorf("%s is missing", tc.name)
			continue
		}
		if h.Typeflag != tc.typ || h.Uid != tc.uid || h.Gid != tc.gid {
			t.Errorf("%s: type %c owner %d:%d, want %c %d:%d", tc.name, h.Typeflag, h.Uid, h.Gid, tc.typ, tc.uid, tc.gid)
		}
	}
}

// TestChownOfMissingPath: a -chown must name a path of the image.
func TestChownOfMissingPath(t *testing.T) {
	exe, err := os.Executable()
	must(t, err)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"-out", filepath.Join(dir, "x.tar"), "-name", "x:1", "-entrypoint", "/bin/x",
		"-file", "/bin/x=" + exe, "-chown", "/data=65534:65534"}, &stdout, &stderr)
	want := "imagebuild: " + filepath.Join(dir, "x.tar") + ": chown /data: no such path in the image\n"
	if code != 1 || stderr.String() != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, stderr.String(), want)
	}
}

// TestBadFlags: malformed -dir and -chown are usage errors.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-dir", "data"},
		{"-dir", "/"},
		{"-chown", "/data"},
		{"-chown", "/data=nobody"},
		{"-chown", "/data=1:x"},
		{"-chown", "data=1:1"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
}

// readArchive returns the image config of the only image of an OCI archive
// and the headers of its only layer, by name.
func readArchive(t *testing.T, archive string) (imageConfig, map[string]*tar.Header) {
	t.Helper()
	blobs := map[string][]byte{}
	f, err := os.Open(archive)
	must(t, err)
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		must(t, err)
		blobs[hdr.Name], err = io.ReadAll(tr)
		must(t, err)
	}
	blob := func(digest string, v any) []byte {
		b, ok := blobs["blobs/"+strings.Replace(digest, ":", "/", 1)]
		if !ok {
			t.Fatalf("blob %s is missing", digest)
		}
		if v != nil {
			must(t, json.Unmarshal(b, v))
		}
		return b
	}
	var manifest struct {
		Config struct{ Digest string }
		Layers []struct{ Digest string }
	}
	blob(manifestDigest(t, archive), &manifest)
	var cfg imageConfig
	blob(manifest.Config.Digest, &cfg)
	if len(manifest.Layers) != 1 {
		t.Fatalf("%d layers, want 1", len(manifest.Layers))
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(manifest.Layers[0].Digest, nil)))
	must(t, err)
	layer := map[string]*tar.Header{}
	lr := tar.NewReader(zr)
	for {
		hdr, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return cfg, layer
		}
		must(t, err)
		layer[hdr.Name] = hdr
	}
}

// imageConfig is what readArchive reads of an image's config.
type imageConfig struct {
	Config struct {
		User, WorkingDir string
		Entrypoint, Cmd  []string
	}
}
